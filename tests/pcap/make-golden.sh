#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Makes the golden captures of tests/pcap: a switch and hosts over UDP
# loopback with --capture on the switch, then the expected ina-replay output
# of each capture. Run it again (and review the diff) only when a change to
# the pipeline is meant to change what it answers; with NAMEs, makes only
# those captures.
# Usage: tests/pcap/make-golden.sh BUILD_DIR [NAME...]
set -euo pipefail
build=$1
shift
only=" $* "
here=$(cd "$(dirname "$0")" && pwd)
port=9195
tmp=$(mktemp -d)
sw=""
trap '[ -n "$sw" ] && kill "$sw" 2>/dev/null; rm -rf "$tmp"' EXIT
export INA_JOB_TOKEN=golden

# record NAME SWITCH_PORT_OPTS WORLD HOST_ARGS...
record() {
    local name=$1 opts=$2 world=$3
    shift 3
    [ "$only" = "  " ] || [[ "$only" == *" $name "* ]] || return 0
    "$build/switch_sim/ina-switch" --listen "127.0.0.1:$port" --capture "$here/$name.pcap" \
        --port-opts "$opts" --log-level warn >"$tmp/sw.log" 2>&1 &
    sw=$!
    sleep 0.2
    local hosts=()
    for ((r = 0; r < world; r++)); do
        timeout 60 "$build/host/ina-host" --switch "127.0.0.1:$port" --job 3 --rank $r \
            --world "$world" --quiet --log-level err "$@" &
        hosts+=("$!")
    done
    for h in "${hosts[@]}"; do wait "$h"; done
    kill -TERM "$sw"; wait "$sw" || true
    sw=""
    "$build/switch_sim/ina-replay" "$here/$name.pcap" >"$here/$name.expected"
    echo "$name: $(stat -c %s "$here/$name.pcap") bytes, $(grep -c '^RESULT' "$here/$name.expected") results"
}

# Two workers, f32, a sparse tensor, 5% loss: shadow replies and WAITs.
record f32-loss5 "drop=0.05,seed=5" 2 --elements 2000 --density 0.4 --block 64 --lanes 4 \
    --rounds 2 --port udp:drop=0.05,seed=9
# Three workers, i32, lane openers and agreed exponents, no loss.
record i32-world3 "drop=0" 3 --elements 1500 --density 0.5 --block 128 --lanes 3 --rounds 2 \
    --encoding i32
# Two workers, f32, the value filter in both directions and the block planner,
# no loss: DATA with a result bound, DEFERRED results, B changing per round.
record f32-filter-plan "drop=0" 2 --elements 2000 --density 1 --block 64 --lanes 4 \
    --rounds 4 --sparsify both --keep-density 0.5 --filter-b0 0.5 --filter-decay 0.8 --plan
# Two workers, f32, sub-blocks (PROTOCOL 2.7): B 256 in 16 sub-blocks of 16,
# the filter holding back most small values so that each rank's masks differ
# and the RESULTs carry their unions, 3% loss: shadow replies with masks.
if "$build/host/ina-host" --help 2>&1 | grep -q -- '--sub-block'; then
    record f32-sub "drop=0.03,seed=4" 2 --elements 2000 --density 0.6 --block 256 \
        --sub-block 16 --lanes 4 --rounds 3 --sparsify filter --filter-b0 0.9 \
        --port udp:drop=0.03,seed=8
else
    echo "f32-sub: not recorded: this ina-host has no --sub-block"
fi
