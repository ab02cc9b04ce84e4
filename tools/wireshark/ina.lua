-- SPDX-License-Identifier: MIT
-- wireshark dissector for ina, the in-network aggregation protocol, wire
-- version 2: the fixed 56-byte header of docs/PROTOCOL.md section 2 and the
-- payload of each packet type, sub-blocks (2.7) included, on udp port 9150
-- (preference "ina.udp_port" to change it).
--
-- load it for one run:
--   wireshark -X lua_script:tools/wireshark/ina.lua capture.pcap
--   tshark -X lua_script:tools/wireshark/ina.lua -o ina.udp_port:9195 -r capture.pcap
-- or for good: copy it into ~/.local/lib/wireshark/plugins/ (older versions:
-- ~/.config/wireshark/plugins/) and restart wireshark.

local ina = Proto("ina", "In-Network Aggregation")

local HDR_SIZE = 56
local DEFAULT_PORT = 9150
local BLOCK_OPEN = 0xfffffffe
local BLOCK_END = 0xffffffff
local MAX_VALUES = 64
local WIRE_VERSION = 2

local T_JOIN, T_JOIN_ACK, T_DATA, T_RESULT, T_WAIT, T_ERROR, T_REPL, T_FAILOVER =
	1, 2, 3, 4, 5, 9, 10, 11

local type_names = {
	[1] = "join", [2] = "join_ack", [3] = "data", [4] = "result", [5] = "wait",
	[6] = "fin", [7] = "fin_ack", [8] = "leave", [9] = "error", [10] = "repl",
	[11] = "failover", [12] = "keepalive",
}
local enc_names = { [1] = "f32", [2] = "i32", [3] = "bf16" }
-- bytes per payload element, by encoding
local enc_sizes = { [1] = 4, [2] = 4, [3] = 2 }
local status_names = {
	[1] = "no_slots", [2] = "no_jobs", [3] = "mismatch", [4] = "unsupported", [5] = "left",
	[6] = "peer_dead", [7] = "shutdown", [8] = "cookie",
}

-- adds a number field and, for a special value, its name: "Block: 4294967294 (OPEN)"
local function add_named(tree, field, range, names)
	local item = tree:add(field, range)
	local name = names[range:uint()]
	if name then item:append_text(" (" .. name .. ")") end
	return item
end

-- header fields; numbers in decimal so that tshark -T fields prints them as
-- the c tools do (value strings only change the display)
local f = {
	version = ProtoField.uint8("ina.version", "Version", base.DEC),
	type = ProtoField.uint8("ina.type", "Type", base.DEC, type_names),
	encoding = ProtoField.uint8("ina.encoding", "Encoding", base.DEC, enc_names),
	flags = ProtoField.uint8("ina.flags", "Flags", base.DEC),
	flag_ver = ProtoField.bool("ina.flags.ver", "Slot version", 8, nil, 0x01),
	flag_retx = ProtoField.bool("ina.flags.retx", "Retransmission", 8, nil, 0x02),
	flag_sat = ProtoField.bool("ina.flags.saturated", "Saturated", 8, nil, 0x04),
	flag_def = ProtoField.bool("ina.flags.deferred", "Deferred", 8, nil, 0x08),
	flag_standby = ProtoField.bool("ina.flags.standby", "Standby", 8, nil, 0x10),
	flag_partial = ProtoField.bool("ina.flags.partial", "Partial (ssp, contributors follow)", 8, nil,
		0x20),
	flag_grant = ProtoField.bool("ina.flags.grant", "Grant or reshape (fewer lanes)", 8, nil, 0x40),
	flag_redirect = ProtoField.bool("ina.flags.redirect", "Redirect (host aggregator)", 8, nil, 0x80),
	job_id = ProtoField.uint32("ina.job_id", "Job id", base.DEC),
	epoch = ProtoField.uint32("ina.epoch", "Epoch", base.DEC),
	rank = ProtoField.uint16("ina.rank", "Rank", base.DEC),
	lane = ProtoField.uint16("ina.lane", "Lane", base.DEC),
	tensor_id = ProtoField.uint32("ina.tensor_id", "Tensor id", base.DEC),
	round = ProtoField.uint32("ina.round", "Round", base.DEC),
	tensor_len = ProtoField.uint32("ina.tensor_len", "Tensor length", base.DEC),
	block = ProtoField.uint32("ina.block", "Block", base.DEC),
	next = ProtoField.uint32("ina.next", "Next", base.DEC),
	-- the block_size field: B in bits 0-12, sub_log in bits 13-15 (2.1)
	block_size = ProtoField.uint16("ina.block_size", "Block size B", base.DEC, nil, 0x1fff),
	sub_log = ProtoField.uint16("ina.sub_log", "Sub-blocks log2 (sub_log)", base.DEC, nil, 0xe000),
	sub_elems = ProtoField.uint16("ina.sub_elems", "Sub-block size b", base.DEC),
	n_elems = ProtoField.uint16("ina.n_elems", "Elements", base.DEC),
	exp = ProtoField.int16("ina.exp", "Exponent", base.DEC),
	status = ProtoField.uint16("ina.status", "Status", base.DEC),
	bound = ProtoField.uint32("ina.bound", "Result filter bound (raw)", base.DEC),
	bound_value = ProtoField.float("ina.bound.value", "Result filter bound"),
	token = ProtoField.uint64("ina.token", "Token", base.HEX),
	-- payload
	payload = ProtoField.bytes("ina.payload", "Payload"),
	-- sub-blocks (2.7): the presence mask, what it names, each present one
	sub_mask = ProtoField.bytes("ina.sub.mask", "Presence mask"),
	sub_present = ProtoField.uint16("ina.sub.present", "Present sub-blocks", base.DEC),
	sub_present_elems = ProtoField.uint16("ina.sub.present_elems", "Present elements", base.DEC),
	sub_index = ProtoField.uint16("ina.sub.index", "Sub-block", base.DEC),
	value_f32 = ProtoField.float("ina.value", "Value"),
	value_i32 = ProtoField.int32("ina.value", "Value", base.DEC),
	value_bf16 = ProtoField.uint16("ina.value_bf16", "Value (bf16 bits)", base.HEX),
	join_world = ProtoField.uint16("ina.join.world", "World", base.DEC),
	join_lanes = ProtoField.uint16("ina.join.lanes", "Lanes", base.DEC),
	join_max_block = ProtoField.uint16("ina.join.max_block", "Max block", base.DEC),
	join_reserved = ProtoField.uint16("ina.join.reserved", "Reserved", base.DEC),
	redirect_ipv4 = ProtoField.ipv4("ina.redirect.ipv4", "Host aggregator"),
	redirect_port = ProtoField.uint16("ina.redirect.port", "Host aggregator port", base.DEC),
	wait_missing = ProtoField.uint64("ina.wait.missing", "Missing ranks", base.HEX),
	error_msg = ProtoField.string("ina.error.msg", "Message"),
}
ina.fields = {
	f.version, f.type, f.encoding, f.flags, f.flag_ver, f.flag_retx, f.flag_sat, f.flag_def,
	f.flag_standby, f.flag_partial, f.flag_grant, f.flag_redirect,
	f.job_id, f.epoch, f.rank, f.lane, f.tensor_id, f.round, f.tensor_len, f.block,
	f.next, f.block_size, f.sub_log, f.sub_elems, f.n_elems, f.exp, f.status, f.bound, f.bound_value, f.token,
	f.payload, f.sub_mask, f.sub_present, f.sub_present_elems, f.sub_index, f.value_f32, f.value_i32, f.value_bf16, f.join_world, f.join_lanes,
	f.join_max_block, f.join_reserved, f.redirect_ipv4, f.redirect_port, f.wait_missing,
	f.error_msg,
}

local e_short = ProtoExpert.new("ina.short", "Shorter than the 56-byte ina header",
	expert.group.MALFORMED, expert.severity.ERROR)
local e_payload = ProtoExpert.new("ina.bad_payload", "Payload size disagrees with the header",
	expert.group.PROTOCOL, expert.severity.WARN)
local e_version = ProtoExpert.new("ina.bad_version", "Not wire version 2 (this dissector's)",
	expert.group.PROTOCOL, expert.severity.WARN)
local e_mask = ProtoExpert.new("ina.bad_mask",
	"Bad sub-blocks: B not a multiple of 2^sub_log, an empty mask, or a bit past the last sub-block",
	expert.group.MALFORMED, expert.severity.ERROR)
ina.experts = { e_short, e_payload, e_version, e_mask }

ina.prefs.udp_port = Pref.uint("UDP port", DEFAULT_PORT, "UDP port of ina (default 9150)")

-- the block and next pointers as the info column shows them
local function block_str(v)
	if v == BLOCK_OPEN then return "OPEN" end
	if v == BLOCK_END then return "END" end
	return tostring(v)
end

-- a bf16 bit pattern (the top half of a binary32) as a number
local function bf16_value(b)
	local sign = b >= 0x8000 and -1 or 1
	local e = math.floor(b / 128) % 256
	local m = b % 128
	if e == 255 then
		if m == 0 then return sign * math.huge end
		return 0 / 0
	end
	if e == 0 then return sign * m * 2 ^ -133 end
	return sign * (1 + m / 128) * 2 ^ (e - 127)
end

-- adds up to 'room' of the 'count' values at 'off' under 'pt'; returns
-- how many it added
local function add_values(buf, pt, enc, off, count, room)
	local size = enc_sizes[enc] or 4
	local shown = math.max(0, math.min(count, room))
	for i = 0, shown - 1 do
		local r = buf(off + size * i, size)
		if enc == 2 then
			pt:add(f.value_i32, r)
		elseif enc == 3 then
			local it = pt:add(f.value_bf16, r)
			it:set_text(string.format("Value: %.9g (bf16 0x%04x)", bf16_value(r:uint()), r:uint()))
		else
			pt:add(f.value_f32, r)
		end
	end
	if count > shown then
		pt:add(buf(off + size * shown, (count - shown) * size),
			string.format("[%d more values]", count - shown))
	end
	return shown
end

local function dissect_values(buf, tree, ptype, enc, n)
	local size = enc_sizes[enc] or 4
	local avail = math.floor((buf:len() - HDR_SIZE) / size)
	local count = math.min(n, avail)
	if count <= 0 then return end
	local pt = tree:add(f.payload, buf(HDR_SIZE, count * size))
	pt:set_text(string.format("Values: %d %s", count, enc_names[enc] or "?"))
	add_values(buf, pt, enc, HDR_SIZE, count, MAX_VALUES)
end

-- bytes of the presence mask for 2^k sub-blocks (0 for k = 0)
local function mask_bytes(k)
	if k == 0 then return 0 end
	if k <= 5 then return 4 end
	return 2 ^ k / 8
end

-- the sub-block payload of a block of n elements (2.7): the mask, what it
-- names, then each present sub-block with its values; returns the bytes the
-- payload should have, or nil with the mask flagged bad
local function dissect_sub_blocks(buf, tree, enc, bs, k, n)
	local size = enc_sizes[enc] or 4
	local b = math.floor(bs / 2 ^ k)
	local mb = mask_bytes(k)
	local rest = buf:len() - HDR_SIZE
	if bs % 2 ^ k ~= 0 then
		tree:add_proto_expert_info(e_mask)
		return nil
	end
	if rest < mb then return mb end -- no whole mask: a length error
	local count = math.floor((n + b - 1) / b)
	local mt = tree:add(f.sub_mask, buf(HDR_SIZE, mb))
	local present, elems, bad = {}, 0, false
	for i = 0, mb - 1 do
		local byte = buf(HDR_SIZE + i, 1):uint()
		for j = 0, 7 do
			if math.floor(byte / 2 ^ j) % 2 == 1 then
				local s = 8 * i + j
				if s >= count then
					bad = true
				else
					present[#present + 1] = s
					elems = elems + math.min(b, n - s * b)
				end
			end
		end
	end
	if bad or #present == 0 then
		mt:add_proto_expert_info(e_mask)
		return nil
	end
	mt:append_text(string.format(" (%d of %d sub-blocks of %d)", #present, count, b))
	tree:add(f.sub_present, buf(HDR_SIZE, mb), #present):set_generated()
	tree:add(f.sub_present_elems, buf(HDR_SIZE, mb), elems):set_generated()
	local off, room = HDR_SIZE + mb, MAX_VALUES
	for _, s in ipairs(present) do
		local m = math.min(b, n - s * b)
		local have = math.max(0, math.min(m, math.floor((buf:len() - off) / size)))
		if have <= 0 then break end
		local st = tree:add(f.sub_index, buf(off, have * size), s)
		st:set_text(string.format("Sub-block %d: elements %d..%d, %d %s", s, s * b,
			s * b + m - 1, m, enc_names[enc] or "?"))
		room = room - add_values(buf, st, enc, off, have, room)
		off = off + m * size
	end
	return mb + elems * size
end

function ina.dissector(buf, pinfo, tree)
	local len = buf:len()
	if len == 0 then return 0 end
	pinfo.cols.protocol = "INA"
	local t = tree:add(ina, buf(0, math.min(len, HDR_SIZE)))
	if len < HDR_SIZE then
		t:add_proto_expert_info(e_short)
		pinfo.cols.info = "ina (truncated)"
		return len
	end

	local ptype = buf(1, 1):uint()
	local enc = buf(2, 1):uint()
	local vt = t:add(f.version, buf(0, 1))
	if buf(0, 1):uint() ~= WIRE_VERSION then vt:add_proto_expert_info(e_version) end
	t:add(f.type, buf(1, 1))
	t:add(f.encoding, buf(2, 1))
	local ft = t:add(f.flags, buf(3, 1))
	ft:add(f.flag_ver, buf(3, 1))
	ft:add(f.flag_retx, buf(3, 1))
	ft:add(f.flag_sat, buf(3, 1))
	ft:add(f.flag_def, buf(3, 1))
	ft:add(f.flag_standby, buf(3, 1))
	ft:add(f.flag_partial, buf(3, 1))
	ft:add(f.flag_grant, buf(3, 1))
	ft:add(f.flag_redirect, buf(3, 1))
	t:add(f.job_id, buf(4, 4))
	t:add(f.epoch, buf(8, 4))
	add_named(t, f.rank, buf(12, 2), { [0xffff] = "switch", [0xfffe] = "all" })
	t:add(f.lane, buf(14, 2))
	t:add(f.tensor_id, buf(16, 4))
	t:add(f.round, buf(20, 4))
	t:add(f.tensor_len, buf(24, 4))
	add_named(t, f.block, buf(28, 4), { [BLOCK_OPEN] = "OPEN" })
	add_named(t, f.next, buf(32, 4), { [BLOCK_END] = "END" })
	t:add(f.block_size, buf(36, 2))
	t:add(f.sub_log, buf(36, 2))
	local bs = buf(36, 2):bitfield(3, 13)
	local k = buf(36, 2):bitfield(0, 3)
	t:add(f.sub_elems, buf(36, 2), math.floor(bs / 2 ^ k)):set_generated()
	t:add(f.n_elems, buf(38, 2))
	t:add(f.exp, buf(40, 2))
	-- ERROR: its code; WAIT: 1 = LIVE (the switch vouches for the ranks named)
	add_named(t, f.status, buf(42, 2),
		ptype == T_WAIT and { [1] = "live" } or ptype == T_ERROR and status_names or {})
	local bt = t:add(f.bound, buf(44, 4))
	if enc ~= 2 and buf(44, 4):uint() ~= 0 then
		bt:add(f.bound_value, buf(44, 4))	-- binary32 bits (f32, bf16)
	end
	t:add(f.token, buf(48, 8))

	local job = buf(4, 4):uint()
	local round = buf(20, 4):uint()
	local lane = buf(14, 2):uint()
	local block = buf(28, 4):uint()
	local nxt = buf(32, 4):uint()
	local n = buf(38, 2):uint()
	local name = (type_names[ptype] or ("type" .. ptype)):upper()
	local info = string.format("%s job %u", name, job)
	local rest = len - HDR_SIZE

	if ptype == T_DATA or ptype == T_RESULT or ptype == T_REPL then
		info = info .. string.format(" round %u lane %u block %s next %s",
			round, lane, block_str(block), block_str(nxt))
		if ptype == T_REPL then
			local to = buf(12, 2):uint()
			info = info .. (to == 0xfffe and " to all" or string.format(" to rank %u", to))
		end
		if n > 0 then info = info .. string.format(" n %u", n) end
		if k > 0 then info = info .. string.format(" b %u", math.floor(bs / 2 ^ k)) end
		-- a PARTIAL result's contributor bitmap follows the payload
		local trailer = (ptype ~= T_DATA and buf(3, 1):bitfield(2, 1) == 1) and 8 or 0
		if k > 0 and n > 0 then
			local want = dissect_sub_blocks(buf, t, enc, bs, k, n)
			if want == nil then
				info = info .. " bad mask"
			elseif rest ~= want + trailer then
				t:add_proto_expert_info(e_payload)
			end
		else
			if rest ~= n * (enc_sizes[enc] or 4) + trailer then
				t:add_proto_expert_info(e_payload)
			end
			dissect_values(buf, t, ptype, enc, n)
		end
	elseif ptype == T_JOIN or ptype == T_JOIN_ACK then
		if rest >= 8 then
			t:add(f.join_world, buf(56, 2))
			t:add(f.join_lanes, buf(58, 2))
			t:add(f.join_max_block, buf(60, 2))
			t:add(f.join_reserved, buf(62, 2))
			info = info .. string.format(" world %u lanes %u max_block %u",
				buf(56, 2):uint(), buf(58, 2):uint(), buf(60, 2):uint())
		end
		local redirect = ptype == T_JOIN_ACK and buf(3, 1):bitfield(0, 1) == 1
		if redirect and rest >= 16 then
			t:add(f.redirect_ipv4, buf(64, 4))
			t:add(f.redirect_port, buf(68, 2))
			info = info .. string.format(" redirect to %s:%u", tostring(buf(64, 4):ipv4()),
				buf(68, 2):uint())
		end
		if rest ~= (redirect and 16 or 8) then t:add_proto_expert_info(e_payload) end
	elseif ptype == T_WAIT then
		info = info .. string.format(" round %u lane %u block %s", round, lane, block_str(block))
		if rest >= 8 then
			t:add(f.wait_missing, buf(56, 8))
			info = info .. " missing 0x" .. buf(56, 8):uint64():tohex()
		end
		if buf(42, 2):uint() == 1 then info = info .. " live" end
		if rest ~= 8 then t:add_proto_expert_info(e_payload) end
	elseif ptype == T_ERROR then
		local status = buf(42, 2):uint()
		info = info .. " " .. (status_names[status] or tostring(status))
		if rest > 0 then
			t:add(f.error_msg, buf(56, rest))
			info = info .. ": " .. buf(56, rest):string()
		end
	elseif ptype == T_FAILOVER then
		info = info .. string.format(" epoch %u", buf(8, 4):uint())
		if rest ~= 0 then t:add_proto_expert_info(e_payload) end
	else
		info = info .. string.format(" round %u", round)
		if rest ~= 0 then t:add_proto_expert_info(e_payload) end
	end
	pinfo.cols.info = info
	return len
end

local udp_port = DissectorTable.get("udp.port")
local current_port = ina.prefs.udp_port
udp_port:add(current_port, ina)

function ina.prefs_changed()
	if ina.prefs.udp_port ~= current_port then
		if current_port ~= 0 then udp_port:remove(current_port, ina) end
		current_port = ina.prefs.udp_port
		if current_port ~= 0 then udp_port:add(current_port, ina) end
	end
end
