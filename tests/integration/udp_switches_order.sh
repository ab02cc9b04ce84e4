#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration test: two ina-switch processes and four ina-host workers over
# UDP loopback, where rank 3 lists the switches in the other order (--switch
# B,A). Its runs of each tensor then go to the other switch under another id
# (egroup.h), so the switches never sum them with the others' runs: every
# rank must fail by its timeout, and none may report a verified round. (The
# barrier ina-host runs before round 0 goes to each rank's first switch, so
# the job fails there already.) Rank 3's idle engine keeps switch A told that
# rank 3 lives (KEEPALIVE), so A's WAITs vouch for it and the others wait as
# for a paused peer: --pause-ms bounds that wait (the default is 10 min).
# Usage: udp_switches_order.sh BUILD_DIR UDP_PORT
set -euo pipefail
build=$1 port=$2
. "$(dirname "$0")/lib.sh"
lib_init
export INA_JOB_TOKEN="test-$port"
a=127.0.0.1:$port b=127.0.0.1:$((port + 1))
start_switch "$tmp/s0.log" --listen "$a"
start_switch "$tmp/s1.log" --listen "$b"
hosts=()
for r in 0 1 2 3; do
    list=$a,$b
    [ "$r" -eq 3 ] && list=$b,$a
    timeout 60 "$build/host/ina-host" --switch "$list" --job 5 --rank "$r" --world 4 \
        --elements 8192 --density 1 --block 256 --lanes 8 --rounds 2 --timeout-ms 1500 --pause-ms 3000 \
        --report "$tmp/r$r.json" --quiet >"$tmp/h$r.log" 2>&1 &
    hosts+=("$!")
done
pids+=("${hosts[@]}")
fail=0
for r in 0 1 2 3; do
    rc=0
    wait "${hosts[$r]}" || rc=$?
    if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ]; then
        echo "rank $r: exit $rc, want a failure of its own (not success, not killed)"; fail=1
    fi
    if [ -s "$tmp/r$r.json" ] && jq -e '[.per_round[]? | select(.verified)] | length > 0' \
        "$tmp/r$r.json" >/dev/null; then
        echo "rank $r reported a verified round"; fail=1
    fi
    grep -q "no progress\|left the job" "$tmp/h$r.log" ||
        { echo "rank $r: no stall or departure named"; cat "$tmp/h$r.log"; fail=1; }
done
[ $fail -eq 0 ] || exit 1
echo "1 passed, 0 failed: switches listed in another order fail every rank, no sum"
