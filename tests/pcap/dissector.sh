#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Checks the Wireshark dissector (tools/wireshark/ina.lua) against the C
# header decoder: for each golden capture, the header fields tshark prints
# with the dissector must equal, line for line, what tests/tools/pcap_fields
# prints, and tshark must report no malformed packet and no Lua error. The
# goldens carry f32 and i32; a bf16 DATA packet and an f32 DATA with
# sub-blocks (docs/PROTOCOL.md 2.7) made here with text2pcap (which comes
# with tshark) go through the same checks, and their trees must name the
# encoding, the mask and what it names, and show the values. Sub-block
# packets with a bad mask and with a short payload must get the same fields
# from both and the dissector's expert info.
# Exits 77 (skipped) when tshark is not installed (scripts/deps installs it).
# Usage: tests/pcap/dissector.sh BUILD_DIR
set -euo pipefail
build=$1
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
lua=$src/tools/wireshark/ina.lua
fields_bin=$build/tests/pcap_fields
if ! command -v tshark >/dev/null 2>&1; then
    echo "tshark not installed (scripts/deps installs it): skipped"
    exit 77
fi
[ -x "$fields_bin" ] || { echo "no $fields_bin: build the pcap_fields target"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fields=(version type encoding flags job_id epoch rank lane tensor_id round tensor_len
        block next block_size sub_log sub_elems n_elems exp status bound
        sub.mask sub.present sub.present_elems token)
eargs=()
for f in "${fields[@]}"; do eargs+=(-e "ina.$f"); done

# DATA, encoding 3 (bf16), job 7, epoch 1, tensor_len 3, block 0, next END,
# B 4, 3 elements: 1, -2.5, +inf, 2 bytes each (docs/PROTOCOL.md 2.4)
bf16_hdr="02 03 03 00 00 00 00 07 00 00 00 01 00 00 00 00 00 00 00 00 00 00 00 00
          00 00 00 03 00 00 00 00 ff ff ff ff 00 04 00 03 00 00 00 00 00 00 00 00
          01 02 03 04 05 06 07 08"
echo "0000 $(echo $bf16_hdr) 3f 80 c0 20 7f 80" >"$tmp/bf16.txt"
if ! command -v text2pcap >/dev/null 2>&1; then
    echo "text2pcap not installed (it comes with tshark): skipped"
    exit 77
fi
text2pcap -q -u 9150,9150 -4 10.77.0.1,10.77.0.2 "$tmp/bf16.txt" "$tmp/bf16-data.pcap" >/dev/null

# DATA, f32, job 7, epoch 1, tensor_len 20, block 0, next END, block_size
# 0x4010: B 16 in 4 sub-blocks of b 4, 16 elements; the mask 0x05 names
# sub-blocks 0 and 2, whose 8 values follow: 1 2 3 4, -5 -6 -7 -8
sub_hdr="02 03 01 00 00 00 00 07 00 00 00 01 00 00 00 00 00 00 00 00 00 00 00 00
         00 00 00 14 00 00 00 00 ff ff ff ff 40 10 00 10 00 00 00 00 00 00 00 00
         01 02 03 04 05 06 07 08"
sub_vals="3f 80 00 00 40 00 00 00 40 40 00 00 40 80 00 00
          c0 a0 00 00 c0 c0 00 00 c0 e0 00 00 c1 00 00 00"
sub_pkt() { # NAME MASK_BYTES VALUE_BYTES
    echo "0000 $(echo $sub_hdr) $2 $(echo $3)" >"$tmp/$1.txt"
    text2pcap -q -u 9150,9150 -4 10.77.0.1,10.77.0.2 "$tmp/$1.txt" "$tmp/$1.pcap" >/dev/null
}
sub_pkt sub-data "05 00 00 00" "$sub_vals"
# a bit past the block's 4 sub-blocks (bit 5), and a payload 4 bytes short
sub_pkt sub-badmask "21 00 00 00" "$sub_vals"
sub_pkt sub-short "05 00 00 00" "$(echo $sub_vals | cut -d' ' -f1-28)"

pass=0 fail=0
for pcap in "$here"/*.pcap "$tmp/bf16-data.pcap" "$tmp/sub-data.pcap" "$tmp/sub-badmask.pcap" \
    "$tmp/sub-short.pcap"; do
    name=$(basename "$pcap" .pcap)
    # the goldens are not on the default port 9150: use the capture's
    # busiest UDP port
    port=$(tshark -r "$pcap" -T fields -e udp.srcport -e udp.dstport 2>/dev/null |
        tr '\t' '\n' | grep -v '^$' | sort | uniq -c | sort -rn | awk 'NR == 1 { print $2 }')
    port=${port:-9150}
    ts=(tshark -X "lua_script:$lua" -o "ina.udp_port:$port" -r "$pcap")

    # token: 0x and 16 lower-case hex digits, whatever padding tshark uses
    "${ts[@]}" -T fields -E separator=/t "${eargs[@]}" 2>"$tmp/$name.err" |
        awk -F '\t' 'BEGIN { OFS = "\t" }
            { t = tolower($NF); sub(/^0x/, "", t)
              while (length(t) < 16) t = "0" t
              $NF = "0x" t; print }' >"$tmp/$name.tshark"
    "$fields_bin" "$pcap" >"$tmp/$name.c"

    ok=1
    if [ ! -s "$tmp/$name.c" ]; then
        echo "$name: pcap_fields printed nothing"; ok=0
    elif ! diff -u "$tmp/$name.c" "$tmp/$name.tshark" >"$tmp/$name.diff"; then
        echo "$name: dissector fields differ from pcap_fields (- C, + tshark):"
        head -n 40 "$tmp/$name.diff"; ok=0
    fi
    bad=$( { "${ts[@]}" -V 2>&1; cat "$tmp/$name.err"; } | grep -c -E 'Malformed|Lua Error' || true)
    # the bad mask is an expert of the group Malformed, wanted there
    [ "$name" = sub-badmask ] && bad=$( { "${ts[@]}" -V 2>&1; cat "$tmp/$name.err"; } |
        grep -c -E 'Lua Error' || true)
    if [ "$bad" != 0 ]; then
        echo "$name: tshark reports $bad malformed packet(s) or Lua error(s):"
        { "${ts[@]}" -V 2>&1; cat "$tmp/$name.err"; } | grep -E 'Malformed|Lua Error' | head -n 10
        ok=0
    fi
    if [ $ok = 1 ]; then
        pass=$((pass + 1))
        echo "ok: $name ($(wc -l <"$tmp/$name.c") frames, port $port)"
    else
        fail=$((fail + 1))
    fi
done

# the bf16 packet's tree: the encoding's name, 2-byte values, no size expert
tshark -X "lua_script:$lua" -r "$tmp/bf16-data.pcap" -V >"$tmp/bf16.v" 2>&1
for want in 'Encoding: bf16 (3)' 'Values: 3 bf16' 'Value: 1 (bf16 0x3f80)' \
            'Value: -2.5 (bf16 0xc020)' 'Value: inf (bf16 0x7f80)'; do
    if ! grep -qF "$want" "$tmp/bf16.v"; then
        echo "bf16-data: tshark -V lacks '$want'"; fail=$((fail + 1))
    fi
done
if grep -q 'Payload size disagrees' "$tmp/bf16.v"; then
    echo "bf16-data: payload size expert on a right-sized bf16 payload"; fail=$((fail + 1))
fi
# the sub-block packets' trees: B, sub_log and b apart, the mask and what it
# names, each present sub-block with its values; the experts where due
tshark -X "lua_script:$lua" -r "$tmp/sub-data.pcap" -V >"$tmp/sub.v" 2>&1
for want in 'Block size B: 16' 'Sub-blocks log2 (sub_log): 2' '[Sub-block size b: 4]' \
            'Presence mask: 05000000 (2 of 4 sub-blocks of 4)' '[Present sub-blocks: 2]' \
            '[Present elements: 8]' 'Sub-block 0: elements 0..3, 4 f32' \
            'Sub-block 2: elements 8..11, 4 f32' 'Value: -5'; do
    if ! grep -qF "$want" "$tmp/sub.v"; then
        echo "sub-data: tshark -V lacks '$want'"; fail=$((fail + 1))
    fi
done
if grep -q -E 'Payload size disagrees|Bad sub-blocks|Expert Info' "$tmp/sub.v"; then
    echo "sub-data: an expert on a right sub-block packet"; fail=$((fail + 1))
fi
tshark -X "lua_script:$lua" -r "$tmp/sub-badmask.pcap" -V >"$tmp/badmask.v" 2>&1
if ! grep -qF 'Bad sub-blocks' "$tmp/badmask.v" || grep -q 'Present sub-blocks' "$tmp/badmask.v"; then
    echo "sub-badmask: no bad mask expert, or counts shown for a bad mask"; fail=$((fail + 1))
fi
tshark -X "lua_script:$lua" -r "$tmp/sub-short.pcap" -V >"$tmp/short.v" 2>&1
if ! grep -qF 'Payload size disagrees' "$tmp/short.v"; then
    echo "sub-short: no payload size expert on a short sub-block payload"; fail=$((fail + 1))
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ] && [ "$pass" -gt 0 ]
