#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""An on-path attacker for tests (issue 19 point 6), on the loopback
interface: it captures the packets a running job's workers send to the
switch (an AF_PACKET socket on lo, as tcpdump would), then, with what it
read:
  - replays every captured frame, payload byte for byte, so from the ranks'
    own addresses (AF_PACKET send on lo: the source address is the rank's;
    the checksums redone, as lo leaves them partial);
  - replays each captured payload from its own UDP socket (another address):
    DATA, and JOIN (a re-JOIN as the rank, to take its results);
  - forges: each captured DATA with one payload byte changed, from the rank's
    own address (its frame re-sent with the IP and UDP checksums redone) and
    from its own; and a LEAVE made from a captured header (type changed),
    from the rank's address.
It prints "listening" once it captures, then what it sent, one "name count"
line each. Root only (raw sockets).
Usage: capture_attack.py SWITCH_PORT SECONDS_TO_CAPTURE MAX_PACKETS"""
import socket
import struct
import sys
import time

ETH_P_ALL = 0x0003
T_JOIN, T_DATA, T_LEAVE = 1, 3, 8


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def parse(frame, port):
    """(ip header offset, ihl, udp offset) of an IPv4/UDP frame to 'port', or None."""
    if len(frame) < 14 + 20 + 8 or frame[12:14] != b"\x08\x00":
        return None
    ip = 14
    ihl = (frame[ip] & 0x0F) * 4
    if frame[ip + 9] != 17:
        return None
    udp = ip + ihl
    if struct.unpack("!H", frame[udp + 2:udp + 4])[0] != port:
        return None
    return ip, ihl, udp


def refix(frame, ip, ihl, udp):
    """The frame with its IPv4 and UDP checksums recomputed."""
    f = bytearray(frame)
    f[ip + 10:ip + 12] = b"\0\0"
    f[ip + 10:ip + 12] = struct.pack("!H", csum(bytes(f[ip:ip + ihl])))
    ulen = struct.unpack("!H", f[udp + 4:udp + 6])[0]
    f[udp + 6:udp + 8] = b"\0\0"
    pseudo = bytes(f[ip + 12:ip + 20]) + struct.pack("!BBH", 0, 17, ulen)
    c = csum(pseudo + bytes(f[udp:udp + ulen])) or 0xFFFF
    f[udp + 6:udp + 8] = struct.pack("!H", c)
    return bytes(f)


def main():
    port, secs, maxn = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
    sniff = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    sniff.bind(("lo", 0))
    sniff.settimeout(0.2)
    print("listening", flush=True)
    frames = []
    end = time.time() + secs
    while time.time() < end and len(frames) < maxn:
        try:
            frame, addr = sniff.recvfrom(65535)
        except socket.timeout:
            continue
        if addr[2] == socket.PACKET_OUTGOING:
            continue  # lo shows each packet twice: keep the incoming copy
        if parse(frame, port):
            frames.append(frame)
    sniff.close()
    raw = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    raw.bind(("lo", 0))
    own = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    dst = ("127.0.0.1", port)
    sent = {"captured": len(frames), "replay_rank_addr": 0, "replay_own_addr": 0,
            "rejoin_own_addr": 0, "forged_rank_addr": 0, "forged_own_addr": 0,
            "forged_leave_rank_addr": 0}
    for frame in frames:
        ip, ihl, udp = parse(frame, port)
        payload = frame[udp + 8:]
        if len(payload) < 56:
            continue
        ptype = payload[1]
        raw.send(refix(frame, ip, ihl, udp))  # lo leaves checksums partial
        sent["replay_rank_addr"] += 1
        own.sendto(payload, dst)
        sent["rejoin_own_addr" if ptype == T_JOIN else "replay_own_addr"] += 1
        if ptype == T_DATA and len(payload) > 56:
            f = bytearray(frame)
            f[udp + 8 + 56] ^= 0x40
            raw.send(refix(f, ip, ihl, udp))
            sent["forged_rank_addr"] += 1
            own.sendto(bytes(f[udp + 8:]), dst)
            sent["forged_own_addr"] += 1
        if ptype == T_DATA and sent["forged_leave_rank_addr"] < 8:
            # A LEAVE of the job from the rank's address: the captured
            # header, type changed, no payload (its tag cannot follow).
            f = bytearray(frame[:udp + 8 + 56])
            f[udp + 8 + 1] = T_LEAVE
            total = len(f) - ip
            f[ip + 2:ip + 4] = struct.pack("!H", total)
            f[udp + 4:udp + 6] = struct.pack("!H", 8 + 56)
            raw.send(refix(f, ip, ihl, udp))
            sent["forged_leave_rank_addr"] += 1
        time.sleep(0.0002)  # no flood: the job's own packets must get through
    for k, v in sent.items():
        print(k, v)


if __name__ == "__main__":
    main()
