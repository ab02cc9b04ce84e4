#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration test: an on-path attacker against a job in tenant mode (issue
# 19 point 6), over UDP loopback. tests/tools/capture_attack.py captures the
# workers' packets on lo from before they join, then replays every one from
# the ranks' own addresses (raw frames) and from its own, re-JOINs as the
# ranks from its own address, forges DATA (a payload byte changed, its tag
# kept) from both, and LEAVEs from the ranks' addresses. The job of 3 ranks
# must verify every one of its 300 rounds and finish; the switch must count
# the forgeries (auth_fail), the replays from elsewhere (wrong_address,
# rank_moved: a 56-byte cookie, nothing moved), and abort nothing.
# Then a rank that really moves, on a second switch: rank 1's worker is
# killed mid-run and started again (a new process, a new port). Its JOIN
# draws a cookie of its new address for the run, the JOIN echoing it ends
# the run: ranks 0 and 2 fail naming the move (INA_ELEFT), are started
# again, and the three verify 50 rounds in a new run. Root (raw sockets);
# skips (77) otherwise, unless INA_REQUIRE_DPDK=1 (CI, root).
# It runs in a network namespace of its own, whose lo accepts the frames the
# attacker injects: a frame sent on lo through AF_PACKET carries no route, as
# a looped packet does, so with its 127/8 destination and local source it
# is a martian unless route_localnet and accept_local allow it, and the
# kernel drops it before UDP without a counter (the replays from the ranks'
# addresses then never reached the switch). The workers send without GSO
# here, so that each frame captured is one datagram, as on a wire.
# Usage: udp_tenants_capture.sh BUILD_DIR UDP_PORT
set -euo pipefail
build=$1 port=$2
if [ "$(id -u)" != 0 ]; then
    [ "${INA_REQUIRE_DPDK:-0}" = 1 ] && { echo "not root, and CI requires this test"; exit 1; }
    echo "skip: raw sockets need root"; exit 77
fi
if [ -z "${INA_CAPTURE_NS:-}" ]; then
    ns=ina-capture-$$
    ip netns add "$ns" || { echo "cannot make a network namespace"; exit 1; }
    trap 'ip netns del "$ns" 2>/dev/null || true' EXIT
    ip netns exec "$ns" ip link set lo up
    ip netns exec "$ns" sysctl -qw net.ipv4.conf.all.route_localnet=1 \
        net.ipv4.conf.lo.route_localnet=1 net.ipv4.conf.all.accept_local=1 \
        net.ipv4.conf.lo.accept_local=1
    rc=0
    INA_CAPTURE_NS=$ns ip netns exec "$ns" "$0" "$@" || rc=$?
    exit $rc
fi
. "$(dirname "$0")/lib.sh"
lib_init
unset INA_JOB_TOKEN INA_TENANT INA_TENANT_KEY
fail=0
key=$(head -c 32 /dev/urandom | base64)
printf 'tenants:\n  - {name: alice, index: 1, key: %s, jobs: 2, slots: 64, max_weight: 4}\n' \
    "$key" >"$tmp/tenants.yaml"
chmod 600 "$tmp/tenants.yaml"
start_switch "$tmp/switch.log" --listen "127.0.0.1:$port" --tenants "$tmp/tenants.yaml"
python3 "$(dirname "$0")/../tools/capture_attack.py" "$port" 1.5 400 >"$tmp/attack.log" 2>&1 &
att=$!
pids+=("$att")
for _ in $(seq 100); do
    grep -q listening "$tmp/attack.log" && break
    kill -0 "$att" 2>/dev/null || break
    sleep 0.05
done
grep -q listening "$tmp/attack.log" || { echo "the attacker did not start:"; cat "$tmp/attack.log"; exit 1; }
hosts=()
for r in 0 1 2; do
    INA_TENANT=1 INA_TENANT_KEY=$key timeout 120 "$build/host/ina-host" \
        --switch "127.0.0.1:$port" --port udp:gso=0 --job 5 --rank $r --world 3 \
        --elements 20000 --density 0.5 --block 64 --lanes 4 --rounds 300 --quiet \
        --report "$tmp/r$r.json" >"$tmp/h$r.log" 2>&1 &
    hosts+=("$!")
done
pids+=("${hosts[@]}")
wait "$att" || { echo "the attacker failed:"; cat "$tmp/attack.log"; fail=1; }
cat "$tmp/attack.log"
# verified PID WHAT LOG REPORT: the worker PID exited 0 with its every round
# verified, or the test fails.
verified() {
    if ! wait "$1"; then
        echo "FAIL: $2 failed:"; cat "$3"; fail=1
    elif [ "$(jq -r .verified "$4")" != true ]; then
        echo "FAIL: $2: not verified"; fail=1
    else
        echo "ok   $2: verified"
    fi
}
for r in 0 1 2; do
    verified "${hosts[$r]}" "rank $r, 300 rounds" "$tmp/h$r.log" "$tmp/r$r.json"
done
kill -0 "$sw" 2>/dev/null || { echo "the switch died"; cat "$tmp/switch.log"; exit 1; }
kill -USR1 "$sw"; sleep 0.3
kill -TERM "$sw"; wait "$sw" || true
sent() { awk -v n="$1" '$1 == n { print $2; exit }' "$tmp/attack.log"; }
# counter NAME [LOG]: the switch's last count of NAME (0 if none)
counter() { awk -v n="$1" '$1 == n { v = $2 } END { print v + 0 }' "${2:-$tmp/switch.log}"; }
# at_least NAME VALUE MIN
at_least() {
    if [ "${2:-0}" -lt "$3" ]; then
        echo "FAIL $1 is ${2:-0}, want at least $3"; fail=1
    else
        echo "ok   $1 ${2:-0} (at least $3)"
    fi
}
[ "$(sent captured)" -ge 50 ] || { echo "FAIL: captured only $(sent captured) packets"; fail=1; }
# Every forged packet from a rank's own address that reaches the switch is a
# failed tag, or, when the changed byte was a sub-block mask's, a malformed
# block dropped before its tag; a rank's DATA from the attacker's address,
# forged or replayed, is dropped before its tag (wrong_address). Under load
# a full socket buffer may lose some before the switch, so at least half of
# each.
at_least "drop_auth_fail + drop_bad_mask + drop_bad_length" \
    $(($(counter drop_auth_fail) + $(counter drop_bad_mask) + $(counter drop_bad_length))) \
    $((($(sent forged_rank_addr) + $(sent forged_leave_rank_addr)) / 2))
at_least "drop_wrong_address" "$(counter drop_wrong_address)" $(($(sent forged_own_addr) / 2))
if [ "$(sent rejoin_own_addr)" -gt 0 ]; then
    at_least drop_rank_moved "$(counter drop_rank_moved)" 1
else
    echo "FAIL: no JOIN captured"; fail=1
fi
for n in jobs_aborted jobs_refused drop_wrong_token; do
    v=$(counter $n)
    [ "${v:-0}" = 0 ] || { echo "FAIL $n is $v"; fail=1; }
done
[ $fail -eq 0 ] && echo "capture attack: the job exact and finished; every forgery and replay dropped"

start_switch "$tmp/switch2.log" --listen "127.0.0.1:$port" --tenants "$tmp/tenants.yaml"
# rank RANK ROUNDS LOG [REPORT]: a worker of job 6 (exec: $! is ina-host
# itself)
rank() {
    INA_TENANT=1 INA_TENANT_KEY=$key exec "$build/host/ina-host" \
        --switch "127.0.0.1:$port" --job 6 --rank "$1" --world 3 --elements 20000 \
        --density 0.5 --block 64 --lanes 4 --rounds "$2" --quiet ${4:+--report "$4"} \
        >"$3" 2>&1
}
old=()
for r in 0 1 2; do
    rank $r 1000000 "$tmp/m${r}a.log" &
    old+=("$!")
done
pids+=("${old[@]}")
for _ in $(seq 200); do # until all three joined (the SIGUSR1 dump lists them)
    kill -USR1 "$sw"
    sleep 0.05
    grep -q "joined 0,1,2" "$tmp/switch2.log" && break
done
grep -q "joined 0,1,2" "$tmp/switch2.log" || { echo "FAIL: job 6 never had its 3 ranks"; exit 1; }
kill -KILL "${old[1]}"
wait "${old[1]}" 2>/dev/null || true
rank 1 50 "$tmp/m1b.log" "$tmp/m1.json" &
new=("$!")
pids+=("$!")
# alive PID: running (an exited child not yet waited for is a zombie, which
# kill -0 still finds)
alive() { [ -n "$(ps -o stat= -p "$1" 2>/dev/null | grep -v Z)" ]; }
for r in 0 2; do
    # Bounded: the move ends their run at once (else their 1000000 rounds).
    for _ in $(seq 400); do alive "${old[$r]}" || break; sleep 0.05; done
    if alive "${old[$r]}"; then
        echo "FAIL: rank $r still runs after rank 1 moved:"; cat "$tmp/m${r}a.log"
        fail=1; kill "${old[$r]}"
    elif wait "${old[$r]}"; then
        echo "FAIL: rank $r finished 1000000 rounds?"; fail=1
    elif grep -q "joined again from another address" "$tmp/m${r}a.log"; then
        echo "ok   rank $r: the run ended, naming the move"
    else
        echo "FAIL: rank $r failed otherwise:"; cat "$tmp/m${r}a.log"; fail=1
    fi
    rank $r 50 "$tmp/m${r}b.log" "$tmp/m$r.json" &
    new+=("$!")
    pids+=("$!")
done
for i in 0 1 2; do
    r=$([ $i = 0 ] && echo 1 || echo $(((i - 1) * 2)))
    verified "${new[$i]}" "rank $r, 50 rounds after the move" "$tmp/m${r}b.log" "$tmp/m$r.json"
done
kill -USR1 "$sw"; sleep 0.3
kill -TERM "$sw"; wait "$sw" || true
counter2() { counter "$1" "$tmp/switch2.log"; }
at_least "moved: drop_rank_moved" "$(counter2 drop_rank_moved)" 1
for n in "jobs_aborted 1" "jobs_admitted 2"; do
    set -- $n
    [ "$(counter2 "$1")" = "$2" ] || { echo "FAIL moved: $1 is $(counter2 "$1"), want $2"; fail=1; }
done
[ $fail -eq 0 ] && echo "a rank that moved: the run ended, a new run exact and finished"
exit $fail
