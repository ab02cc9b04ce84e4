#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration test: runs that cannot finish end with a clear error in bounded
# time, never a hang: no switch at the address, a job the switch refuses, a
# peer that never shows up, a missing token, a malformed gradient file, a
# worker killed mid-run (and the survivors re-joining as a smaller job), a
# switch stopped with SIGTERM while a job runs (drained, its workers told).
# Usage: udp_errors.sh BUILD_DIR UDP_PORT
set -euo pipefail
build=$1 port=$2
host=$build/host/ina-host
. "$(dirname "$0")/lib.sh"
lib_init
export INA_JOB_TOKEN="errors-$port"
fail=0
passed=0

# expect NAME SECONDS PATTERN command...: must exit non-zero within SECONDS
# (with a little slack) and print PATTERN.
expect() {
    expect_start "$@"
    expect_check "$1"
}
# expect_start NAME SECONDS PATTERN command...: the same in the background,
# expect_check NAME then judges it: for cases that only wait on clocks.
expect_start() {
    local name=$1 limit=$2 pattern=$3
    shift 3
    printf '%s\n%s\n' "$limit" "$pattern" >"$tmp/$name.want"
    (
        rc=0
        t0=$(date +%s%N)
        timeout $((limit + 10)) "$@" >"$tmp/$name.log" 2>&1 || rc=$?
        t1=$(date +%s%N)
        echo "$rc $(((t1 - t0) / 1000000))" >"$tmp/$name.rc"
    ) &
    echo $! >"$tmp/$name.pid"
}
expect_check() {
    local name=$1 limit pattern rc ms
    wait "$(cat "$tmp/$name.pid")" || true
    { read -r limit; read -r pattern; } <"$tmp/$name.want"
    read -r rc ms <"$tmp/$name.rc"
    if [ $rc -eq 0 ] || [ $rc -eq 124 ] || ! grep -q "$pattern" "$tmp/$name.log" ||
        [ $ms -gt $((limit * 1000 + 2000)) ]; then
        echo "FAIL $name: exit $rc after $ms ms; output:"; cat "$tmp/$name.log"; fail=$((fail + 1))
    else
        echo "ok   $name: exit $rc after $ms ms: $(grep -m1 "$pattern" "$tmp/$name.log")"
        passed=$((passed + 1))
    fi
}

common=(--job 5 --elements 10000 --rounds 2 --timeout-ms 1500 --quiet)
# (the three at once: no switch answers any of them)
expect_start no_switch 2 "did not answer" "$host" --switch "127.0.0.1:$port" --rank 0 --world 2 \
    "${common[@]}"
# ... saying where the JOINs went and what to check there, and, with a
# timeout longer than 1.5 s, warning at 1.5 s already.
expect_start no_switch_where 2 \
    "JOINs went to the switch 127.0.0.1:$port .*over udp: is ina-switch listening" \
    "$host" --switch "127.0.0.1:$port" --rank 0 --world 2 "${common[@]}"
expect_start no_switch_warn 3 "warn: .*no answer after 1.5 s of JOINs" "$host" \
    --switch "127.0.0.1:$port" --rank 0 --world 2 --job 5 --elements 10000 --rounds 2 \
    --timeout-ms 2500
for name in no_switch no_switch_where no_switch_warn; do expect_check $name; done

start_switch "$tmp/switch.log" --listen "127.0.0.1:$port" --slots 16 --peer-timeout-ms 1000
expect refused 2 "needs 64 contiguous slots" "$host" --switch "127.0.0.1:$port" --rank 0 --world 2 "${common[@]}"
# A peer that never shows up: the switch finds it silent from admission for
# its peer timeout (1 s) and aborts the job (a WAIT vouching for a peer keeps
# the worker waiting past its own 1.5 s timeout, as for a pause).
expect missing_peer 3 "rank 1 silent" "$host" --switch "127.0.0.1:$port" --rank 0 --world 2 \
    --lanes 8 "${common[@]}"
expect no_token 1 "no job token" env -u INA_JOB_TOKEN "$host" --switch "127.0.0.1:$port" --rank 0 \
    --world 2 "${common[@]}"
printf 'not a numpy file' >"$tmp/bad.npy"
expect bad_input 1 "bad.npy" "$host" --switch "127.0.0.1:$port" --rank 0 --world 2 --job 6 \
    --input "$tmp/bad.npy"
expect bad_option 1 "density" "$host" --switch "127.0.0.1:$port" --rank 0 --world 2 --job 6 \
    --density 2

# A worker that dies mid-run (SIGKILL): the switch (peer timeout 1 s) aborts
# the round and tells the survivors, whose runs fail naming the dead rank well
# before their own 10 s timeout; then the two survivors re-join the same job
# id as a world of two, under a new epoch, and finish.
kill "$sw"; wait "$sw" 2>/dev/null || true
start_switch "$tmp/switch2.log" --listen "127.0.0.1:$port" --peer-timeout-ms 1000 \
    --drain-ms 500
dead=(--job 8 --world 3 --elements 200000 --rounds 100000 --timeout-ms 10000 --quiet)
hosts=()
for r in 0 1 2; do
    "$host" --switch "127.0.0.1:$port" --rank $r "${dead[@]}" >"$tmp/dead$r.log" 2>&1 &
    hosts+=("$!"); pids+=("$!")
done
sleep 1
t0=$(date +%s%N)
kill -9 "${hosts[2]}"
for r in 0 1; do
    rc=0
    wait_for "${hosts[$r]}" 20 || rc=$?
    ms=$((($(date +%s%N) - t0) / 1000000))
    if [ $rc -ne 0 ] && grep -q "rank 2 silent" "$tmp/dead$r.log" && [ $ms -lt 6000 ]; then
        echo "ok   dead_worker rank $r: exit $rc after $ms ms: $(grep -m1 'rank 2 silent' "$tmp/dead$r.log")"
        passed=$((passed + 1))
    else
        echo "FAIL dead_worker rank $r: exit $rc after $ms ms; output:"; cat "$tmp/dead$r.log"
        fail=$((fail + 1))
    fi
done
grep -q "job 8: rank 2 silent" "$tmp/switch2.log" ||
    { echo "FAIL dead_worker: the switch did not log the abort"; cat "$tmp/switch2.log"; fail=$((fail + 1)); }
hosts=()
for r in 0 1; do
    timeout 30 "$host" --switch "127.0.0.1:$port" --rank $r --job 8 --world 2 --elements 10000 \
        --rounds 3 --quiet >"$tmp/rejoin$r.log" 2>&1 &
    hosts+=("$!"); pids+=("$!")
done
for r in 0 1; do
    if wait "${hosts[$r]}"; then
        echo "ok   rejoin rank $r: job 8 again as a world of two"; passed=$((passed + 1))
    else
        echo "FAIL rejoin rank $r:"; cat "$tmp/rejoin$r.log"; fail=$((fail + 1))
    fi
done

# A graceful stop: SIGTERM while a job runs. The switch refuses new jobs,
# gives the running one --drain-ms 500 to finish, then tells its workers,
# which fail with the switch's sentence instead of timing out, and it exits.
hosts=()
for r in 0 1; do
    "$host" --switch "127.0.0.1:$port" --rank $r --job 9 --world 2 --elements 200000 \
        --rounds 100000 --timeout-ms 10000 --quiet >"$tmp/drain$r.log" 2>&1 &
    hosts+=("$!"); pids+=("$!")
done
sleep 1
t0=$(date +%s%N)
kill -TERM "$sw"
rc=0
timeout 10 tail -s 0.1 --pid="$sw" -f /dev/null || rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
if [ $rc -eq 0 ] && [ $ms -lt 3000 ]; then
    echo "ok   drain: the switch exited $ms ms after SIGTERM"; passed=$((passed + 1))
else
    echo "FAIL drain: the switch still runs $ms ms after SIGTERM"; fail=$((fail + 1))
fi
wait "$sw" 2>/dev/null || true
sw=""
for r in 0 1; do
    rc=0
    wait_for "${hosts[$r]}" 15 || rc=$?
    if [ $rc -ne 0 ] && grep -q "shutting down" "$tmp/drain$r.log"; then
        echo "ok   drain rank $r: exit $rc: $(grep -m1 'shutting down' "$tmp/drain$r.log")"
        passed=$((passed + 1))
    else
        echo "FAIL drain rank $r: exit $rc; output:"; cat "$tmp/drain$r.log"; fail=$((fail + 1))
    fi
done
grep -q "aborting 1 job" "$tmp/switch2.log" ||
    { echo "FAIL drain: the switch did not log the abort"; cat "$tmp/switch2.log"; fail=$((fail + 1)); }
echo "$passed passed, $fail failed"
[ $fail -eq 0 ]
