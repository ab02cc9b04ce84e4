#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Faults on demand over UDP loopback: one ina-switch and WORLD ina-host
# processes, every port with the fault options FAULTS (faults.h: drop=, dup=,
# reorder=, delay=, delay_us=, ...; the seed differs per process). Every sum
# must verify (bit for bit on synthetic f32 and i32), every worker must hold
# the same bits, every process must finish in time, and every kind of fault
# asked for must really have been injected (the switch's counters, plus the
# hosts' injected_drops for drop=).
# Usage: faults_udp.sh BUILD_DIR UDP_PORT FAULTS ENCODING [extra ina-host args...]
set -euo pipefail
build=$1 port=$2 faults=$3 enc=$4
shift 4
world=${WORLD:-4}
tmp=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
export INA_JOB_TOKEN="faults-$port"
start=$(date +%s.%N)
"$build/switch_sim/ina-switch" --listen "127.0.0.1:$port" --port-opts "$faults,seed=7" \
    --log-level warn >"$tmp/switch.log" 2>&1 &
sw=$!
pids+=("$sw")
sleep 0.2
hosts=()
for ((r = 0; r < world; r++)); do
    timeout 150 "$build/host/ina-host" --switch "127.0.0.1:$port" --job 42 --rank "$r" \
        --world "$world" --encoding "$enc" --port "udp:$faults,seed=$((r + 11))" \
        --report "$tmp/r$r.json" --quiet --log-level warn "$@" >"$tmp/h$r.log" 2>&1 &
    hosts+=("$!")
done
pids+=("${hosts[@]}")
fail=0
for ((r = 0; r < world; r++)); do
    rc=0
    wait "${hosts[$r]}" || rc=$?
    [ $rc -eq 0 ] || { echo "rank $r failed (exit $rc):"; cat "$tmp/h$r.log"; fail=1; }
done
secs=$(echo "$(date +%s.%N) - $start" | bc)
kill -USR1 "$sw"; sleep 0.2; kill -TERM "$sw"; wait "$sw" || true
for ((r = 0; r < world; r++)); do
    [ -s "$tmp/r$r.json" ] || { echo "rank $r wrote no report"; fail=1; continue; }
    v=$(jq -r '.verified' "$tmp/r$r.json")
    [ "$v" = "true" ] || { echo "rank $r report says verified=$v"; fail=1; }
done
if [ $fail -eq 0 ]; then
    hashes=$(jq -s -r '[.[].per_round | map(.sum_hash)] | unique | length' "$tmp"/r*.json)
    [ "$hashes" = "1" ] || { echo "workers received different bits: $hashes distinct result sequences"; fail=1; }
fi
# The switch's final counters (after the SIGUSR1 snapshot).
stats=$(awk '/ina-switch stats/ { n++ } n == 2' "$tmp/switch.log")
counter() { echo "$stats" | awk -v k="$1" '$1 == k { v = $2 } END { print v + 0 }'; }
# Every kind with a rate > 0 was injected: by the switch (any kind), and for
# drop= by the switch and the hosts together.
for kv in ${faults//,/ }; do
    k=${kv%%=*} v=${kv#*=}
    case $k in drop | dup | reorder | delay) ;; *) continue ;; esac
    [ "$(echo "$v > 0" | bc)" = 1 ] || continue
    n=$(counter "port_inject_$k")
    [ "$k" = drop ] && n=$((n + $(jq -s '[.[].injected_drops] | add' "$tmp"/r*.json)))
    echo "injected $k: $n"
    [ "$n" -gt 0 ] || { echo "$k=$v was asked for but never injected"; fail=1; }
done
retx=$(jq -s '[.[].retransmits] | add' "$tmp"/r*.json)
echo "$stats" | grep -E "port_(rx|tx)_pkts|port_inject" || true
jq -c '{rank, rounds, verified, retransmits, injected_drops, seconds, packets_sent}' \
    "$tmp"/r*.json || true
if [ $fail -ne 0 ]; then
    echo "--- switch log"; cat "$tmp/switch.log"; exit 1
fi
printf '1 passed, 0 failed: world %s, %s, %s, %s retransmits, %.2f s\n' "$world" "$faults" "$enc" \
    "$retx" "$secs"
