#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration test: pauses are not deaths (issue 15), over UDP loopback with a
# real ina-switch (--peer-timeout-ms 1000) and three ranks of
# tests/tools/pause_check (the public API, every sum checked exactly, each
# rank's own timeout 2 s, keepalive_ms 250: a quarter of the peer timeout):
#   pause:     rank 0 sleeps 5 s (five peer timeouts) between two allreduces,
#              inside no ina call, while ranks 1 and 2 wait in the second:
#              every rank finishes every round right, the waiters' round
#              lasted the pause, the switch counted keepalives and aborted
#              nothing;
#   no_keepalive: the same with keepalive_ms 0: the switch takes the pause
#              for a death, the waiters' round 1 fails naming rank 0 within
#              2.5 s (the peer timeout and their resends' backoff);
#   killed:    rank 2 SIGKILLed mid-job: ranks 0 and 1 fail naming it, the
#              switch having found it silent for less than 2.5 s (the peer
#              timeout, 1 s, plus their resends' backoff), within 4.5 s of
#              the kill as this script measures it.
# The three run at once, each against its own switch (UDP ports PORT,
# PORT+1, PORT+2): they wait on clocks, not on the CPU.
# Usage: udp_pause.sh BUILD_DIR UDP_PORT
set -euo pipefail
build=$1 port=$2
tool=$build/tests/pause_check
. "$(dirname "$0")/lib.sh"
lib_init
export INA_JOB_TOKEN="pause-$port"
fail=0
passed=0
ok() { echo "ok   $*"; passed=$((passed + 1)); }
ko() { echo "FAIL $*"; fail=$((fail + 1)); }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

start_switch "$tmp/switch.log" --listen "127.0.0.1:$port" --peer-timeout-ms 1000
sw_pause=$sw
start_switch "$tmp/switch_nokeep.log" --listen "127.0.0.1:$((port + 1))" --peer-timeout-ms 1000
start_switch "$tmp/switch_killed.log" --listen "127.0.0.1:$((port + 2))" --peer-timeout-ms 1000

# start_ranks ARRAY JOB PORT NAME ARG...: ranks 0-2 of job JOB against the
# switch on PORT, each "$tool ADDR RANK ARG...", logs in $tmp/NAME<rank>.log;
# their pids in ARRAY (and in pids, for the cleanup).
start_ranks() {
    local -n ranks=$1
    local job=$2 p=$3 name=$4 r
    shift 4
    ranks=()
    for r in 0 1 2; do
        INA_JOB_ID=$job "$tool" "127.0.0.1:$p" $r "$@" >"$tmp/$name$r.log" 2>&1 &
        ranks+=("$!"); pids+=("$!")
    done
}
# pause: rank 0 pauses 5000 ms before round 1 of 3.
start_ranks hosts 11 "$port" pause 3 3 5000 0 1 5000 250 2000
# no_keepalive: the same pause without keepalives is a death.
start_ranks nokeep 12 "$((port + 1))" nokeep 3 3 5000 0 1 5000 0 2000
# killed: rank 2 dies mid-job (many small rounds); the others hear of it.
start_ranks killed 13 "$((port + 2))" killed 3 1000000 64 9 0 0 250 10000
sleep 1
t0=$(now_ms)
kill -9 "${killed[2]}"
killed_ms=()
for r in 0 1; do
    rc=0
    wait_for "${killed[$r]}" 20 || rc=$?
    killed_ms+=("$rc $(($(now_ms) - t0))")
done

for r in 0 1 2; do
    if wait_for "${hosts[$r]}" 30 && grep -q "rank $r done: rounds 3" "$tmp/pause$r.log"; then
        ok "pause rank $r: $(tr '\n' ' ' <"$tmp/pause$r.log")"
    else
        ko "pause rank $r:"; cat "$tmp/pause$r.log"
    fi
done
for r in 1 2; do
    ms=$(sed -n "s/^rank $r round 1 ok \([0-9]*\) ms$/\1/p" "$tmp/pause$r.log")
    if [ -n "$ms" ] && [ "$ms" -ge 4500 ]; then
        ok "pause rank $r waited $ms ms in round 1 (its timeout: 2000 ms)"
    else
        ko "pause rank $r: round 1 took '${ms}' ms, not the pause"
    fi
done
kill -USR1 "$sw_pause"
sleep 0.3
ka=$(sed -n 's/^ *keepalives *\([0-9]*\)$/\1/p' "$tmp/switch.log" | tail -1)
if [ -n "$ka" ] && [ "$ka" -ge 3 ] && ! grep -q "jobs_aborted" "$tmp/switch.log"; then
    ok "pause: the switch took $ka keepalives and aborted no job"
else
    ko "pause: keepalives '${ka}', or a job aborted:"; cat "$tmp/switch.log"
fi

# no_keepalive
hosts=("${nokeep[@]}")
for r in 1 2; do
    rc=0
    wait_for "${hosts[$r]}" 20 || rc=$?
    # How long its round 1 lasted, as the rank measured it.
    ms=$(sed -n "s/^rank $r round 1 failed after \([0-9]*\) ms: .*rank 0 silent.*/\1/p" \
        "$tmp/nokeep$r.log")
    if [ $rc -ne 0 ] && [ -n "$ms" ] && [ "$ms" -lt 2500 ]; then
        ok "no_keepalive rank $r: $(grep -m1 'rank 0 silent' "$tmp/nokeep$r.log")"
    else
        ko "no_keepalive rank $r: exit $rc, round 1 '${ms}' ms:"; cat "$tmp/nokeep$r.log"
    fi
done
rc=0
wait_for "${hosts[0]}" 20 || rc=$?
if [ $rc -ne 0 ] && [ $rc -ne 124 ]; then
    ok "no_keepalive rank 0: its job is gone when it comes back (exit $rc)"
else
    ko "no_keepalive rank 0 finished a job the switch aborted"
fi

# killed (waited for above)
for r in 0 1; do
    read -r rc ms <<<"${killed_ms[$r]}"
    silent=$(sed -n 's/.*rank 2 silent for \([0-9]*\) ms.*/\1/p' "$tmp/killed$r.log" | head -1)
    # The switch's own measure of the silence, and ours (which includes
    # tail's polling, every 0.1 s).
    if [ $rc -ne 0 ] && [ -n "$silent" ] && [ "$silent" -lt 2500 ] && [ $ms -lt 4500 ]; then
        ok "killed rank $r: exit $rc after $ms ms: $(grep -m1 'rank 2 silent' "$tmp/killed$r.log")"
    else
        ko "killed rank $r: exit $rc after $ms ms:"; cat "$tmp/killed$r.log"
    fi
done

echo "$passed passed, $fail failed"
[ $fail -eq 0 ]
