#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the seed corpora of fuzz/corpus/ (committed; rerun after changing
an input format): valid packets of every type for fuzz_wire, and short
scripted jobs for fuzz_pipeline (the op codes of fuzz_pipeline.c).
Usage: fuzz/gen_corpus.py"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
(JOIN, JOIN_ACK, DATA, RESULT, WAIT, FIN, FIN_ACK, LEAVE, ERROR, REPL, FAILOVER,
 KEEPALIVE) = range(1, 13)
STANDBY, ALL = 0x10, 0xFFFE
F32, I32, BF16 = 1, 2, 3
END, OPEN, SWITCH = 0xFFFFFFFF, 0xFFFFFFFE, 0xFFFF
TOKEN = 0x1111111111111111


def hdr(typ, enc=F32, flags=0, job=1, epoch=1, rank=0, lane=0, tensor=0, rnd=0,
        tlen=0, block=0, nxt=0, bs=0, n=0, exp=0, status=0, bound=0, token=TOKEN, sub=0):
    # wire version 2; block_size carries B in bits 0-12 and sub_log above
    return struct.pack(">BBBBIIHHIIIIIHHhHIQ", 2, typ, enc, flags, job, epoch, rank, lane,
                       tensor, rnd, tlen, block, nxt, bs | sub << 13, n, exp, status, bound,
                       token)


def mask(bits, k):
    """The presence mask of sub-blocks 'bits' for 2^k sub-blocks (PROTOCOL 2.7)."""
    nbytes = 4 if k <= 5 else 2**k // 8
    return sum(1 << b for b in bits).to_bytes(nbytes, "little")


def f32s(vals):
    return b"".join(struct.pack(">f", v) for v in vals)


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def wire():
    # 12 control bytes: 0 -> the job's id, token, epoch and encoding come
    # from the header; world 4, 4 lanes, max block 16; scale 4, world 4.
    ctl = bytes([0, 0, 0, 0, 3, 0, 3, 0, 15, 0, 8, 3])
    seeds = {
        "join": hdr(JOIN, epoch=0, rank=1) + struct.pack(">HHHH", 4, 4, 16, 0),
        "join_ack": hdr(JOIN_ACK, rank=SWITCH) + struct.pack(">HHHH", 4, 4, 16, 0),
        "data_f32": hdr(DATA, lane=1, tlen=40, block=1, nxt=5, bs=8, n=8) +
        f32s([1.5, -2, 0, 3e38, -1e-40, 7, 8, 9]),
        "data_f32_tail": hdr(DATA, lane=0, tlen=36, block=4, nxt=END, bs=8, n=4,
                             bound=0x3f000000) + f32s([0.25, -0.1, 0, 0.4]),
        "data_i32_open": hdr(DATA, enc=I32, lane=2, tlen=64, block=OPEN, nxt=2, bs=16, exp=3),
        "data_i32": hdr(DATA, enc=I32, lane=2, tlen=64, block=2, nxt=END, bs=16, n=16,
                        bound=100) + b"".join(struct.pack(">i", v) for v in
                                              [0, 1, -1, 2**30, -2**31, 2**31 - 1, 5, 6,
                                               7, 8, 9, 10, 11, 12, 13, -14]),
        "result_bf16": hdr(RESULT, enc=BF16, flags=1, rank=SWITCH, lane=3, tlen=20, block=3,
                           nxt=END, bs=4, n=4) + bytes([0x3f, 0x80, 0x7f, 0x81, 0xff, 0x80,
                                                        0x00, 0x01]),
        "result_deferred": hdr(RESULT, flags=8, rank=SWITCH, lane=1, tlen=40, block=1,
                               nxt=5, bs=8),
        "wait": hdr(WAIT, flags=1, rank=SWITCH, lane=1, tlen=40, block=1, bs=8) +
        struct.pack(">Q", 0b1010),
        "fin": hdr(FIN, rank=2),
        "leave": hdr(LEAVE, rank=3),
        "error": hdr(ERROR, epoch=0, rank=SWITCH, status=3) + b"job 1: mismatch",
        "truncated": hdr(DATA)[:30],
        "join_standby": hdr(JOIN, flags=STANDBY, epoch=5, rank=1) +
        struct.pack(">HHHH", 4, 4, 16, 0),
        "repl": hdr(REPL, flags=1, rank=ALL, lane=1, tlen=40, block=1, nxt=5, bs=8, n=8) +
        f32s([1.5, -2, 0, 3e38, -1e-40, 7, 8, 9]),
        "failover": hdr(FAILOVER, rank=2),
        "failover_announce": hdr(FAILOVER, epoch=2, rank=SWITCH),
        "keepalive": hdr(KEEPALIVE, rank=1, rnd=7),
        "wait_live": hdr(WAIT, flags=1, rank=SWITCH, lane=1, tlen=40, block=1, bs=8,
                         status=1) + struct.pack(">Q", 0b100),
        # sub-blocks (PROTOCOL 2.7): B 16 in 4 of b 4, sub-blocks 0, 1, 3
        "data_f32_sub": hdr(DATA, lane=0, tlen=40, block=0, nxt=END, bs=16, sub=2, n=16) +
        mask([0, 1, 3], 2) + f32s([1, -2, 0, 4, 5, 6, 7, 8, -0.5, 1e-40, 3e38, 9]),
        # a short last block: 8 of B 16 in sub-blocks of 2, 0 and 3 present
        "data_f32_sub_tail": hdr(DATA, lane=2, tlen=40, block=2, nxt=END, bs=16, sub=3, n=8,
                                 bound=0x3f000000) + mask([0, 3], 3) + f32s([1, 2, 3, 4]),
        "data_i32_sub": hdr(DATA, enc=I32, lane=0, tlen=64, block=0, nxt=END, bs=64, sub=6,
                            n=64, exp=0) + mask([0, 33, 63], 6) +
        b"".join(struct.pack(">i", v) for v in [1, -2**31, 2**24]),
        # 128 sub-blocks of 1 over a short block of 100, the last one present
        "result_bf16_sub": hdr(RESULT, enc=BF16, rank=SWITCH, lane=0, tlen=100, block=0,
                               nxt=END, bs=128, sub=7, n=100) + mask([0, 1, 50, 99], 7) +
        bytes([0x3f, 0x80, 0x7f, 0x81, 0xff, 0x80, 0x00, 0x01]),
        # a PARTIAL REPL of sub-block 1 of 2, then the contributor bitmap
        "repl_sub_partial": hdr(REPL, flags=0x21, rank=ALL, lane=1, tlen=40, block=1, nxt=5,
                                bs=8, sub=1, n=8) + mask([1], 1) + f32s([1, 2, 3, 4]) +
        struct.pack(">Q", 0b1011),
        # refused: a bit past the block's 4 sub-blocks; a payload one value short
        "data_sub_badmask": hdr(DATA, lane=0, tlen=40, block=0, nxt=END, bs=16, sub=2, n=16) +
        mask([0, 4], 2) + f32s([1, 2, 3, 4, 5, 6, 7, 8]),
        "data_sub_short": hdr(DATA, lane=0, tlen=40, block=0, nxt=END, bs=16, sub=2, n=16) +
        mask([2], 2) + f32s([1, 2, 3]),
        # the i32 exponent's range (PROTOCOL 7.1): its top, accepted; one past its
        # bottom, and one on an f32 packet, refused (bad_exp)
        "data_i32_exp_max": hdr(DATA, enc=I32, lane=2, tlen=64, block=OPEN, nxt=2, bs=16,
                                exp=140),
        "result_i32_exp_low": hdr(RESULT, enc=I32, rank=SWITCH, lane=2, tlen=64, block=OPEN,
                                  nxt=2, bs=16, exp=-155),
        "data_f32_exp": hdr(DATA, lane=1, tlen=40, block=1, nxt=5, bs=8, n=8, exp=1) +
        f32s([1, 2, 3, 4, 5, 6, 7, 8]),
    }
    for name, pkt in seeds.items():
        write("fuzz_wire", name, ctl + pkt)


def pipeline():
    # config: 16 slots, slot width 16, 2 jobs, one partition, 10 ms linger,
    # 1 us WAIT interval, 1 s idle, 9 answer buffers, no output held back.
    cfg = bytes([15, 15, 1, 0, 9, 1, 100, 0x08])

    def join(job, rank, shape=None):
        if shape:   # world, lanes, max_block, encoding
            w, l, b, e = shape
            return bytes([0x11, job, w - 1, l - 1, b - 1, e - 1, rank])
        return bytes([0x01, job, rank])

    def data(job, sel, rank, lane, payload=b"", tensor=None, op=0x02, extra=b""):
        out = bytes([op | (0x10 if tensor else 0), job, sel, rank, lane])
        if tensor:   # tensor id, round, length, block size
            tid, rnd, tlen, bs = tensor
            out += bytes([tid, rnd]) + struct.pack(">H", tlen - 1) + bytes([bs - 1])
        return out + extra + payload

    flush, tick = b"\x08", b"\x06\x00"
    fin = lambda job, rank: bytes([0x04, job, rank])
    leave = lambda job, rank: bytes([0x05, job, rank])
    p16 = f32s([1, 2, 3, 4])

    # f32, world 2, 2 lanes, B 4, 8 elements: both lanes complete, then FIN.
    s = cfg + join(0, 0, (2, 2, 4, F32)) + join(0, 1) + flush
    s += data(0, 0x08, 0, 0, p16, tensor=(0, 0, 8, 4)) + data(0, 0x08, 1, 0, p16)
    s += data(0, 0x08, 0, 1, p16) + data(0, 0x08, 1, 1, p16) + flush
    s += data(0, 0x09, 1, 1, p16) + flush            # a retransmission: shadow reply
    s += fin(0, 0) + fin(0, 1) + flush + tick
    write("fuzz_pipeline", "f32_job", s)

    # A pause: rank 1 keeps alive (op 0x44) while rank 0 waits and resends,
    # the clock moving by a second each time; then rank 1's block, and the sum.
    keepalive = lambda job, rank: bytes([0x44, job, rank])
    s = cfg + join(0, 0, (2, 1, 4, F32)) + join(0, 1) + flush
    s += data(0, 0x08, 0, 0, p16, tensor=(0, 0, 4, 4)) + flush
    for _ in range(4):
        s += b"\x97\x08" + keepalive(0, 1) + data(0, 0x09, 0, 0, p16) + flush
    s += data(0, 0x08, 1, 0, p16) + flush + fin(0, 0) + fin(0, 1) + flush + tick
    write("fuzz_pipeline", "keepalive_pause", s)

    # i32, world 2, one lane, B 4, 8 elements: openers, block 0 announced
    # by the result, its two data packets (next END), a duplicate -> WAIT.
    s = cfg + join(1, 0, (2, 1, 4, I32)) + join(1, 1) + flush
    s += data(1, 0x00, 0, 0, tensor=(0, 0, 8, 4), extra=b"\x05")
    s += data(1, 0x00, 1, 0, extra=b"\x06") + flush
    s += data(1, 0x19, 0, 0, struct.pack(">iiii", 1, -2, 3, 2**30)) + flush
    s += data(1, 0x19, 0, 0, struct.pack(">iiii", 1, -2, 3, 2**30)) + flush
    s += data(1, 0x19, 1, 0, struct.pack(">iiii", 5, 6, 7, 2**30)) + flush
    s += b"\x07\x40" + tick + b"\x0e"
    write("fuzz_pipeline", "i32_job", s)

    # bf16 with a bound (DEFERRED), world 3, then LEAVE; a raw JOIN too.
    s = cfg + join(2, 0, (3, 1, 2, BF16)) + join(2, 1) + join(2, 2) + flush
    bound = struct.pack(">I", 0x40000000)   # 2.0
    for r in range(3):
        s += data(2, 0x08, r, 0, bytes([0x3f, 0x00, 0xbe, 0x80]),
                  tensor=(1, 2, 2, 2) if r == 0 else None, op=0x22, extra=bound)
    s += flush + leave(2, 1) + flush
    raw = hdr(JOIN, epoch=0, job=1, token=TOKEN) + struct.pack(">HHHH", 1, 1, 4, 0)
    s += b"\x00" + struct.pack(">H", len(raw)) + raw + b"\x0c\x0b\x03\x05" + flush
    write("fuzz_pipeline", "bf16_leave_raw", s)

    # Two partitions (this is partition 0), a job too big for the slots and
    # one refused for its block size, the quiet path and a follower's free.
    cfg2 = bytes([3, 7, 0, 1, 0, 0, 5, 0x33])
    s = cfg2 + join(0, 0, (1, 8, 8, F32)) + join(1, 0, (1, 4, 9, F32)) + flush
    s += join(3, 0, (1, 2, 4, F32)) + b"\x09" + data(3, 0x08, 0, 1, p16, tensor=(0, 0, 8, 4))
    s += flush + b"\x0d\x03" + b"\x0f" + tick
    write("fuzz_pipeline", "partitions_refusals", s)

    # A primary (role byte 9): the f32 job's results leave as REPLs.
    cfg_p = cfg[:3] + bytes([9]) + cfg[4:]
    s = cfg_p + join(0, 0, (2, 1, 4, F32)) + join(0, 1) + flush
    s += data(0, 0x08, 0, 0, p16, tensor=(0, 0, 4, 4)) + data(0, 0x08, 1, 0, p16) + flush
    s += data(0, 0x08, 1, 0, p16) + flush            # a shadow reply: a REPL to rank 1
    s += fin(0, 0) + fin(0, 1) + flush
    write("fuzz_pipeline", "primary_repl", s)

    # A replica (role byte 18): two standby JOINs (epoch 0x7ffffff1), DATA
    # dropped in standby, its copy as the primary's REPL (stored, sent on),
    # a FAILOVER (takeover, announced), the next block aggregated here.
    cfg_r = cfg[:3] + bytes([18]) + cfg[4:]
    s = cfg_r + bytes([0x51, 0, 1, 0, 3, 0, 0, 1]) + bytes([0x41, 0, 1, 1]) + flush
    s += data(0, 0x10, 0, 0, p16, tensor=(0, 0, 16, 4)) + b"\x4c" + flush
    s += bytes([0x45, 0, 1]) + flush
    s += data(0, 0x09, 0, 0, p16) + data(0, 0x09, 1, 0, p16) + flush
    s += data(0, 0x09, 1, 0, p16) + flush            # a shadow reply
    s += fin(0, 0) + fin(0, 1) + flush + tick + b"\x0e"
    write("fuzz_pipeline", "replica_takeover", s)

    # A rack (role byte 243, an uplink to the spine): job 2 (index 1) is rank
    # 0 of 1 upstream. Two JOINs go up, the spine's JOIN_ACK (op 0x4c, epoch
    # byte) comes down to both; a block complete here goes up, the spine's
    # RESULT comes down; a shadow reply; FIN up, FIN_ACK down.
    spine = lambda extra=b"": b"\x4c" + extra
    cfg_k = cfg[:3] + bytes([243]) + cfg[4:]
    s = cfg_k + join(1, 0, (2, 1, 4, F32)) + join(1, 1) + flush + spine(b"\x00") + flush
    s += data(1, 0x08, 0, 0, p16, tensor=(0, 0, 4, 4)) + data(1, 0x08, 1, 0, p16) + flush
    s += spine() + flush
    s += data(1, 0x08, 1, 0, p16) + flush            # a shadow reply, from the spine's sum
    s += fin(1, 0) + fin(1, 1) + flush + spine() + flush + tick
    write("fuzz_pipeline", "rack_uplink", s)

    # A rack refuses job 1 (no rank upstream); job 0xffffffff (index 3)
    # joins up and the spine answers with an ERROR (op 0x6c, status byte).
    s = cfg_k + join(0, 0, (1, 1, 4, F32)) + flush
    s += join(3, 0, (2, 2, 4, I32)) + flush + b"\x6c\x05" + flush + tick
    write("fuzz_pipeline", "rack_refusals", s)

    # Tenant mode (role byte 27): the jobs are tenants 1, 2, 0x80 and 0xff
    # (none), every packet tagged. Job 0 (tenant 1) runs a block; a copy of
    # rank 1's DATA with a byte of its payload corrupted (tag fails, dropped,
    # unanswered), then the real one twice (the sum, a shadow reply); a JOIN
    # of job 3, whose tenant does not exist (dropped); job 2 of tenant 0x80
    # admitted beside; FIN.
    cfg_t = cfg[:3] + bytes([27]) + cfg[4:]
    s = cfg_t + join(0, 0, (2, 2, 4, F32)) + join(0, 1) + flush
    s += data(0, 0x08, 0, 0, p16, tensor=(0, 0, 8, 4)) + flush
    s += data(0, 0x08, 1, 0, p16) + b"\x0b\x3c\x01" + flush
    s += data(0, 0x08, 1, 0, p16) + b"\x0c" + flush
    s += join(3, 0, (1, 1, 4, F32)) + join(2, 0, (1, 1, 4, F32)) + flush
    s += fin(0, 0) + fin(0, 1) + flush + tick
    write("fuzz_pipeline", "tenants_tags", s)

    # Tenant mode with JOIN cookies (role byte 81): each JOIN first draws a
    # cookie, then echoes it. Rank 1 moves to its second address (rank byte
    # | 0x80): its JOIN draws that address's cookie for the run (rank_moved),
    # the echo ends the run (LEFT); after the tick the retry draws a cookie
    # of no run and joins a new run, rank 0 re-joins; rank 1's old address
    # replays its JOIN (a move without the run's cookie: rank_moved); a block
    # and FIN in the new epoch.
    cfg_c = cfg[:3] + bytes([81]) + cfg[4:]
    moved = 0x81
    s = cfg_c + join(0, 0, (2, 1, 4, F32)) + flush + join(0, 0) + flush
    s += join(0, 1) + flush + join(0, 1) + flush
    s += data(0, 0x08, 0, 0, p16, tensor=(0, 0, 4, 4)) + data(0, 0x08, 1, 0, p16) + flush
    s += join(0, moved) + flush + join(0, moved) + flush + tick
    s += join(0, moved) + flush + join(0, moved) + flush + join(0, 0) + flush
    s += join(0, 1) + flush
    s += data(0, 0x08, 0, 0, p16, tensor=(1, 0, 4, 4)) + flush
    s += fin(0, 0) + flush + tick
    write("fuzz_pipeline", "tenants_rank_moves", s)


def engine():
    # rto 1 ms (backoff cap 8 ms), timeout 100 ms; with a replica (world
    # byte | 0x80) a failover time of 'replica' + 1 first timeouts.
    def cfg(world, rank, lanes, max_block, enc, n, bs, elems, replica=None, keepalive=None):
        out = bytes([world - 1 | (0x80 if replica is not None else 0) |
                     (0x40 if keepalive is not None else 0), rank, lanes - 1,
                     max_block - 1, enc - 1, 9, 99])
        if replica is not None:
            out += bytes([replica])
        if keepalive is not None:   # (period in first timeouts - 1, pause byte)
            out += bytes(keepalive)
        out += struct.pack(">H", n - 1) + bytes([bs - 1, len(elems)])
        for at, v in elems:
            out += struct.pack(">Hf", at, v)
        return out

    tx, join_ack, fin_ack = b"\x00\x0f", b"\x03\x00", b"\x08"

    def result(lane, sel, payload=b"", op=0x04, extra=b""):
        return bytes([op, lane, sel]) + extra + payload

    elems = [(0, 1.0), (5, 2.0), (9, -3.0), (13, 4.0)]
    # f32, world 2, 2 lanes, B 4, 16 elements: the whole allreduce, then FIN.
    s = cfg(2, 0, 2, 4, F32, 16, 4, elems) + tx + join_ack + b"\x0b\x05" + tx
    s += result(0, 0x00, f32s([1, 2, 3, 4])) + result(1, 0x00, f32s([5, 6, 7, 8])) + tx
    s += result(0, 0x01, f32s([1, 1, 1, 1])) + result(1, 0x01, f32s([2, 2, 2, 2])) + tx
    s += b"\x0c" + tx + fin_ack
    write("fuzz_engine", "f32_allreduce", s)

    # The same in tenant mode (rank byte | 0x80): every packet delivered
    # tagged, every 7th first forged under another key (dropped, auth_fail).
    s = cfg(2, 0x80, 2, 4, F32, 16, 4, elems) + tx + join_ack + b"\x0b\x05" + tx
    s += result(0, 0x00, f32s([1, 2, 3, 4])) + result(1, 0x00, f32s([5, 6, 7, 8])) + tx
    s += result(0, 0x01, f32s([1, 1, 1, 1])) + result(1, 0x01, f32s([2, 2, 2, 2])) + tx
    s += b"\x0c" + tx + fin_ack
    write("fuzz_engine", "tenant_allreduce", s)

    # i32 with a result filter: openers, a WAIT, a DEFERRED result, a
    # saturated one, a timeout, then an ERROR.
    s = cfg(3, 1, 2, 8, I32, 20, 8, elems) + tx + join_ack + b"\x1b\x10\x02" + tx
    s += result(0, 0x00, extra=b"\x00\x03") + result(1, 0x00, extra=b"\x00\x02") + tx
    s += bytes([0x84, 0, 0x01]) + struct.pack(">Q", 0b100)
    s += result(0, 0x31) + result(1, 0x05, struct.pack(">8i", *range(8))) + tx
    s += b"\x0f" + tx + bytes([0x07, 12, 3]) + b"job 7: bad"
    write("fuzz_engine", "i32_filter_wait_error", s)

    # Keepalives every 5 ms, the longest pause 200 ms: KEEPALIVEs while
    # READY, then an allreduce kept waiting by LIVE WAITs naming rank 1
    # (past the 100 ms timeout) until the longest pause fails it.
    s = cfg(2, 0, 2, 4, F32, 16, 4, elems, keepalive=(4, 1)) + tx + join_ack
    s += (b"\x0f" + tx) * 3 + b"\x0b\x05" + tx
    live_wait = bytes([0x84, 0, 0x02]) + struct.pack(">Q", 0b10)
    s += (b"\x0f" + tx + live_wait) * 90 + (b"\x0f" + tx) * 4
    write("fuzz_engine", "keepalive_live_wait", s)

    # bf16, one lane, a retransmission after the deadline, a stale result of
    # another version, a raw packet, and LEAVE.
    s = cfg(1, 0, 1, 4, BF16, 6, 3, [(2, 0.5), (4, -1.5)]) + tx + join_ack + b"\x2b\x01" + tx
    s += b"\x0f" + tx + result(0, 0x08, bytes(6)) + result(0, 0x00, bytes([0x3f, 0x80] * 3))
    raw = hdr(RESULT, enc=BF16, rank=SWITCH, job=7, token=0x0123456789abcdef, tlen=6,
              block=1, nxt=END, bs=3, n=3) + bytes(6)
    s += b"\x09" + struct.pack(">H", len(raw)) + raw + tx + b"\x0d" + tx
    write("fuzz_engine", "bf16_retx_leave", s)

    # With a replica (failover 20 ms): JOIN to the primary, its JOIN_ACK
    # (epoch 1), the STANDBY JOIN to the replica, two wrong STANDBY
    # JOIN_ACKs (from the primary; another job's lanes), the right one.
    standby = tx + join_ack + tx + b"\xc3" + b"\x63" + b"\x43" + tx
    from_r = 0x14   # a RESULT passed on by the replica
    ra = cfg(2, 0, 2, 4, F32, 16, 4, elems, replica=19) + standby

    # The whole allreduce through the replica, FIN to both, FIN_ACKs.
    s = ra + b"\x0b\x05" + tx
    s += result(0, 0x00, f32s([1, 2, 3, 4]), op=from_r)
    s += result(1, 0x00, f32s([5, 6, 7, 8]), op=from_r) + tx
    s += result(0, 0x01, f32s([1, 1, 1, 1]), op=from_r)
    s += result(1, 0x01, f32s([2, 2, 2, 2])) + tx
    s += b"\x0c" + tx + b"\x18" + b"\x08"
    write("fuzz_engine", "replica_standby_join", s)

    # The primary falls silent: FAILOVERs to the replica; wrong
    # announcements (another job, the epoch held, from the primary), the
    # right one (epoch 2); the DATA in flight again to the replica, its
    # results, FIN to the replica alone, its FIN_ACK, a replica ERROR after.
    s = ra + b"\x0b\x05" + tx + (b"\x0f" + tx) * 10
    s += b"\x0e\x04" + b"\x0e\x02" + b"\x0e\x10" + b"\x0e\x00" + tx
    s += result(0, 0x00, f32s([1, 2, 3, 4]), op=from_r)
    s += result(1, 0x00, f32s([5, 6, 7, 8]), op=from_r) + tx
    s += result(0, 0x01, f32s([1, 1, 1, 1]), op=from_r)
    s += result(1, 0x01, f32s([2, 2, 2, 2]), op=from_r) + tx
    s += b"\x0c" + tx + b"\x18" + bytes([0x17, 5, 5]) + b"gone!"
    write("fuzz_engine", "replica_takeover", s)

    # The primary answers WAITs but nothing progresses: the probe (the
    # waiting DATA to the replica), answered with the announcement.
    wait = bytes([0x84, 0, 0x01]) + struct.pack(">Q", 0b10)
    s = ra + b"\x0b\x05" + tx + (wait + b"\x0f" + tx) * 8
    s += b"\x0e\x01" + tx + result(0, 0x00, f32s([1, 2, 3, 4]), op=from_r) + tx
    s += b"\x0d" + tx
    write("fuzz_engine", "replica_probe", s)

    # The primary silent (FAILOVERs), then a WAIT from it with no progress
    # for the failover time: the probe is due at once, and so is the
    # deadline (what test_fuzz_found test_probe_after_failover_deadline keeps).
    s = ra + b"\x0b\x05" + tx + (b"\x0f" + tx) * 10 + wait + tx + b"\x0f" + tx
    write("fuzz_engine", "replica_failover_then_wait", s)

    # The replica refuses to stand by: the join fails, LEAVE to the primary.
    s = cfg(1, 0, 1, 4, BF16, 6, 3, [(2, 0.5)], replica=0) + tx + join_ack + tx
    s += bytes([0x17, 9, 2]) + b"jobs full" + tx + b"\x0f" + tx
    write("fuzz_engine", "replica_refused", s)


wire()
pipeline()
engine()
