#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration test: one ina-switch and WORLD ina-host processes over UDP on
# loopback, with test-only faults on every port (FAULTS: the port options of
# faults.h, drop=, dup=, reorder=, delay=, ...; a bare number P means drop=P;
# the seed differs per process); every sum must verify (bit-exact on
# synthetic f32 and i32 data, within the bound for bf16 and real gradients),
# every worker must hold the same bits, every process must exit in time, and
# every kind of fault asked for must really have been injected.
# Usage: udp_job.sh BUILD_DIR UDP_PORT FAULTS ENCODING [extra ina-host args...]
# (SWITCHES=K: K switches, below; TENANTS=1: tenant mode, lib.sh tenant_mode.)
set -euo pipefail
build=$1 port=$2 faults=$3 enc=$4
shift 4
[[ $faults =~ ^[0-9.]+$ ]] && faults="drop=$faults"
world=${WORLD:-4}
. "$(dirname "$0")/lib.sh"
lib_init
export INA_JOB_TOKEN="test-$port"
tenant_opts=()
[ -n "${TENANTS:-}" ] && tenant_mode 256
# SWITCHES=K: K switches on UDP ports PORT..PORT+K-1, every host given all of
# them (--switch A,B,...), each aggregating one part of every tensor.
nsw=${SWITCHES:-1}
swlist=""
sws=()
for ((s = 0; s < nsw; s++)); do
    log=$tmp/switch.log
    [ "$s" -gt 0 ] && log=$tmp/switch$s.log
    start_switch "$log" --listen "127.0.0.1:$((port + s))" \
        --port-opts "$faults,seed=$((7 + s))" ${tenant_opts[@]+"${tenant_opts[@]}"} ${SWITCH_ARGS:-}
    sws+=("$sw")
    swlist+="${swlist:+,}127.0.0.1:$((port + s))"
done
sw=${sws[0]}
hosts=()
for ((r = 0; r < world; r++)); do
    timeout 120 "$build/host/ina-host" --switch "$swlist" --job 42 --rank "$r" \
        --world "$world" --encoding "$enc" --port "udp:$faults,seed=$((r + 11))" \
        --report "$tmp/r$r.json" --quiet --log-level warn "$@" >"$tmp/h$r.log" 2>&1 &
    hosts+=("$!")
done
pids+=("${hosts[@]}")
fail=0
for ((r = 0; r < world; r++)); do
    if ! wait "${hosts[$r]}"; then
        echo "rank $r failed:"; cat "$tmp/h$r.log"; fail=1
    fi
done
for s in "${sws[@]}"; do kill -USR1 "$s"; done
sleep 0.2
for s in "${sws[@]}"; do kill -TERM "$s"; wait "$s" || true; done
# With several switches every one must have completed blocks of the job.
for ((s = 1; s < nsw; s++)); do
    n=$(awk '/ina-switch stats/ { n++ } n == 2 && $1 == "results" { print $2 }' "$tmp/switch$s.log")
    echo "switch $s results: ${n:-none}"
    [ "${n:-0}" -gt 0 ] || { echo "switch $s aggregated nothing"; cat "$tmp/switch$s.log"; fail=1; }
done
for ((r = 0; r < world; r++)); do
    [ -s "$tmp/r$r.json" ] || { echo "rank $r wrote no report"; fail=1; continue; }
    v=$(jq -r '.verified' "$tmp/r$r.json")
    [ "$v" = "true" ] || { echo "rank $r report says verified=$v"; fail=1; }
    # Per round: a dense round sends every non-zero block and keeps no
    # residual; a sparsified one reports what it sent and what it kept.
    if [[ " $* " == *" --sparsify "* && " $* " != *" --sparsify off "* ]]; then
        want='all(.density_sent > 0 and .density_sent <= 1 and .residual_norm > 0)'
    else
        want='all(.density_sent == 1 and .residual_norm == 0)'
    fi
    v=$(jq -r ".per_round | $want" "$tmp/r$r.json")
    [ "$v" = "true" ] || { echo "rank $r: per_round density_sent/residual_norm: not $want"; fail=1; }
done
# Every worker must hold the same bits every round (the switch sums each block once).
if [ $fail -eq 0 ]; then
    hashes=$(jq -s -r '[.[].per_round | map(.sum_hash)] | unique | length' "$tmp"/r*.json)
    [ "$hashes" = "1" ] || { echo "workers received different bits: $hashes distinct result sequences"; fail=1; }
fi
# With --plan every worker must have used the same B and b every round, and with
# EXPECT_B_VARIES=1 more than one B over the run; with EXPECT_DEFERRED=1 some
# result blocks must have come back DEFERRED. Every worker ran every round on
# the same partition map (its tag); with EXPECT_REBALANCE=1 some round ran on
# a dynamic map (tag not 0). With EXPECT_MAX_B=N every worker's job had N as
# its largest B (the report's block_size) and used it (the first round does).
if [ $fail -eq 0 ]; then
    seqs=$(jq -s -r '[.[].per_round | map([.block_size, .sub_block])] | unique | length' "$tmp"/r*.json)
    [ "$seqs" = "1" ] || { echo "workers used different block sizes"; fail=1; }
    if [ -n "${EXPECT_MAX_B:-}" ]; then
        n=$(jq -s -r "map(.block_size == $EXPECT_MAX_B and ([.per_round[].block_size] | max) == $EXPECT_MAX_B) | all" "$tmp"/r*.json)
        [ "$n" = true ] || { echo "the job's largest B is not $EXPECT_MAX_B"; fail=1; }
    fi
    if [ "${EXPECT_B_VARIES:-0}" = 1 ]; then
        n=$(jq -r '[.per_round[].block_size] | unique | length' "$tmp/r0.json")
        [ "$n" -gt 1 ] || { echo "the planner kept one block size over the run"; fail=1; }
    fi
    tags=$(jq -s -r '[.[].per_round | map(.partition_tag)] | unique | length' "$tmp"/r*.json)
    [ "$tags" = "1" ] || { echo "workers used different partition maps"; fail=1; }
    if [ "${EXPECT_REBALANCE:-0}" = 1 ]; then
        n=$(jq -r '[.per_round[].partition_tag | select(. != 0)] | length' "$tmp/r0.json")
        [ "$n" -gt 0 ] || { echo "no round ran on a dynamic partition map"; fail=1; }
    fi
    if [ "${EXPECT_DEFERRED:-0}" = 1 ]; then
        n=$(jq -r '.blocks_deferred' "$tmp/r0.json")
        [ "$n" -gt 0 ] || { echo "no result block came back deferred"; fail=1; }
    fi
fi
# Every kind asked for with a rate > 0 was injected: by the switch (any
# kind; its final counters, after the SIGUSR1 snapshot), and for drop= by
# the switch and the hosts together.
stats=$(awk '/ina-switch stats/ { n++ } n == 2' "$tmp/switch.log")
counter() { echo "$stats" | awk -v k="$1" '$1 == k { v = $2 } END { print v + 0 }'; }
for kv in ${faults//,/ }; do
    k=${kv%%=*} v=${kv#*=}
    case $k in drop | dup | reorder | delay) ;; *) continue ;; esac
    awk -v v="$v" 'BEGIN { exit !(v > 0) }' || continue
    n=$(counter "port_inject_$k")
    [ "$k" = drop ] && n=$((n + $(jq -s '[.[].injected_drops] | add' "$tmp"/r*.json)))
    echo "injected $k: $n"
    [ "$n" -gt 0 ] || { echo "$kv was asked for but never injected"; fail=1; }
done
jq -c '{rank, rounds, verified, retransmits, injected_drops, seconds, bytes_sent, bytes_received, blocks_deferred,
        B: [.per_round[].block_size], b: [.per_round[].sub_block]}' "$tmp"/r*.json || true
if [ $fail -ne 0 ]; then
    echo "--- switch log"; cat "$tmp/switch.log"; exit 1
fi
echo "1 passed, 0 failed: world $world, $faults, $enc"
