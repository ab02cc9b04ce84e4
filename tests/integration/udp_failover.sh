#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration test: a replica switch over UDP on loopback. A primary
# (ina-switch --replica) and its replica (ina-switch --primary), WORLD
# ina-host workers with --replica verifying every round (bit-exact, the same
# bits on every worker), light loss on every port; the primary is killed with
# SIGKILL in the middle of the run. Every worker must finish every round
# right, report failovers >= 1, and log the takeover; the time from the kill
# to each worker's takeover is printed. First, a worker whose replica does not
# answer must fail its join naming the replica, in bounded time, and one given
# the switch's own address as its replica is refused. With MODE 'tenants'
# both switches run in tenant mode (the same --tenants file) and the workers
# are tenant carol's: every packet, the primary's REPLs to the replica and
# the takeover's included, carries the job key's tag, and neither switch may
# drop one of them on it.
# Usage: udp_failover.sh BUILD_DIR BASE_PORT [FAULTS [MODE]]   (uses BASE_PORT..+2)
set -euo pipefail
build=$1 base=$2 faults=${3:-drop=0.01} mode=${4:-token}
pport=$base rport=$((base + 1)) nport=$((base + 2))
world=${WORLD:-3}
rounds=${ROUNDS:-60}
failover_ms=${FAILOVER_MS:-300}
host=$build/host/ina-host
. "$(dirname "$0")/lib.sh"
lib_init
tenant_opts=() job_name="job 42"
if [ "$mode" = tenants ]; then
    tenant_mode 512
    job_name="job 42 of tenant carol"
else
    export INA_JOB_TOKEN="failover-$base"
fi
fail=0
now_ms() { echo $(($(date +%s%N) / 1000000)); }

start_switch "$tmp/primary.log" --listen "127.0.0.1:$pport" --replica "127.0.0.1:$rport" \
    --port-opts "$faults,seed=7" "${tenant_opts[@]}"
primary=$sw
start_switch "$tmp/replica.log" --listen "127.0.0.1:$rport" --primary "127.0.0.1:$pport" \
    --port-opts "$faults,seed=8" --log-level info "${tenant_opts[@]}"
replica=$sw

# A replica nobody runs: the join fails naming it, within the timeout.
t0=$(now_ms)
rc=0
timeout 20 "$host" --switch "127.0.0.1:$pport" --replica "127.0.0.1:$nport" --job 41 --rank 0 \
    --world 1 --elements 1000 --rounds 1 --timeout-ms 1500 --quiet >"$tmp/noreplica.log" 2>&1 || rc=$?
ms=$(($(now_ms) - t0))
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "replica switch did not answer" "$tmp/noreplica.log" &&
    [ $ms -lt 5000 ]; then
    echo "ok   no_replica: exit $rc after $ms ms: $(grep -m1 'replica' "$tmp/noreplica.log")"
else
    echo "FAIL no_replica: exit $rc after $ms ms; output:"; cat "$tmp/noreplica.log"; fail=1
fi

# The switch as its own replica: refused before anything is sent.
rc=0
timeout 20 "$host" --switch "127.0.0.1:$pport" --replica "127.0.0.1:$pport" --job 41 --rank 0 \
    --world 1 --elements 1000 --rounds 1 --quiet >"$tmp/self.log" 2>&1 || rc=$?
if [ $rc -eq 2 ] && grep -q "is the switch itself" "$tmp/self.log"; then
    echo "ok   self_replica: exit $rc: $(grep -m1 'itself' "$tmp/self.log")"
else
    echo "FAIL self_replica: exit $rc; output:"; cat "$tmp/self.log"; fail=1
fi

# The job, and the primary killed in its middle.
hosts=()
for ((r = 0; r < world; r++)); do
    timeout 100 "$host" --switch "127.0.0.1:$pport" --replica "127.0.0.1:$rport" \
        --failover-ms "$failover_ms" --job 42 --rank "$r" --world "$world" --elements 100000 \
        --density 0.1 --block 256 --lanes 32 --rounds "$rounds" --port "udp:$faults,seed=$((r + 11))" \
        --report "$tmp/r$r.json" --log-level warn >"$tmp/h$r.log" 2>&1 &
    hosts+=("$!")
done
pids+=("${hosts[@]}")
# Kill once every worker has verified a sixth of the rounds (bounded wait).
want=$((rounds / 6))
deadline=$(($(now_ms) + 30000))
while :; do
    done_all=1
    for ((r = 0; r < world; r++)); do
        n=$(grep -c '^round .* verified' "$tmp/h$r.log" || true)
        [ "$n" -ge "$want" ] || done_all=0
    done
    [ $done_all = 1 ] && break
    [ "$(now_ms)" -lt $deadline ] || { echo "FAIL: the workers did not reach round $want in 30 s"; fail=1; break; }
    sleep 0.01
done
t_kill=$(now_ms)
kill -9 "$primary"
wait "$primary" 2>/dev/null || true
killed_at=$(grep -c '^round .* verified' "$tmp/h0.log" || true)
echo "killed the primary after $killed_at verified rounds on rank 0"
# When each worker logs the takeover (polled every 5 ms, for at most 20 s).
took=()
seen=0
deadline=$((t_kill + 20000))
while [ $seen -lt "$world" ] && [ "$(now_ms)" -lt $deadline ]; do
    for ((r = 0; r < world; r++)); do
        [ -n "${took[$r]:-}" ] && continue
        if grep -q "took the job over" "$tmp/h$r.log"; then
            took[$r]=$(($(now_ms) - t_kill)); seen=$((seen + 1))
        fi
    done
    sleep 0.005
done
for ((r = 0; r < world; r++)); do
    if ! wait "${hosts[$r]}"; then
        echo "FAIL rank $r:"; tail -20 "$tmp/h$r.log"; fail=1
    fi
done
for ((r = 0; r < world; r++)); do
    f="$tmp/r$r.json"
    [ -s "$f" ] || { echo "FAIL rank $r wrote no report"; fail=1; continue; }
    v=$(jq -r '.verified' "$f") n=$(jq -r '.per_round | length' "$f")
    fo=$(jq -r '.failovers' "$f") silence=$(jq -r '.failover_silence_ms' "$f")
    [ "$v" = true ] && [ "$n" = "$rounds" ] || { echo "FAIL rank $r: verified=$v, $n of $rounds rounds"; fail=1; }
    [ "$fo" -ge 1 ] 2>/dev/null || { echo "FAIL rank $r: failovers=$fo"; fail=1; }
    line=$(grep -m1 "took the job over" "$tmp/h$r.log" || true)
    [ -n "$line" ] || { echo "FAIL rank $r did not log the takeover"; fail=1; }
    echo "rank $r: failovers $fo, kill to takeover logged ${took[$r]:-never} ms," \
        "switch silent $silence ms at the takeover"
done
grep -q "$job_name: rank .* reports the primary silent: taken over" "$tmp/replica.log" ||
    { echo "FAIL: the replica did not log the takeover"; fail=1; }
if [ "$mode" = tenants ]; then
    # SIGUSR1: the replica's counters; none of the job's packets failed its tag.
    kill -USR1 "$replica"; sleep 0.3
    grep -q 'tenant mode' "$tmp/replica.log" || { echo "FAIL: the replica is not in tenant mode"; fail=1; }
    ! grep -q 'drop_auth_fail' "$tmp/replica.log" ||
        { echo "FAIL: the replica dropped the job's own packets on their tags"; fail=1; }
fi
if [ $fail -eq 0 ]; then
    hashes=$(jq -s -r '[.[].per_round | map(.sum_hash)] | unique | length' "$tmp"/r*.json)
    [ "$hashes" = "1" ] || { echo "FAIL: workers received different bits"; fail=1; }
fi
jq -c '{rank, rounds, verified, failovers, failover_silence_ms, retransmits, injected_drops, seconds}' \
    "$tmp"/r*.json || true
if [ $fail -ne 0 ]; then
    echo "--- replica log"; cat "$tmp/replica.log"
    echo "--- primary log"; cat "$tmp/primary.log"
    for ((r = 0; r < world; r++)); do echo "--- rank $r"; grep -v '^round' "$tmp/h$r.log" || true; done
    exit 1
fi
echo "3 passed, 0 failed: world $world, $faults, $mode mode, primary killed after $killed_at rounds," \
    "failover in ${took[0]} ms (failover time $failover_ms ms)"
