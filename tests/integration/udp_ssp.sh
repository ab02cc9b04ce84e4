#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration test: bounded staleness over UDP (docs/PROTOCOL.md 6.7). One
# ina-switch and four ina-host processes run --consistency ssp:S with
# transient stragglers (--compute-us, --straggle) and loss on every port:
# every rank must find that the sums it received plus every rank's final
# residual equal every rank's gradients over all rounds, bit for bit, and
# the switch must really have closed blocks early (results_partial > 0) and
# answered late packets (ssp_late > 0). Then a rank that joins the ssp job as
# bsp must be refused (MISMATCH).
# Usage: udp_ssp.sh BUILD_DIR UDP_PORT
set -euo pipefail
build=$1 port=$2
world=4
. "$(dirname "$0")/lib.sh"
lib_init
export INA_JOB_TOKEN="test-ssp-$port"
start_switch "$tmp/switch.log" --listen "127.0.0.1:$port" --port-opts "drop=0.01,seed=7"
fail=0
run() {	# run S: one job of ssp:S, every rank checked
    local s=$1 hosts=()
    for ((r = 0; r < world; r++)); do
        timeout 60 "$build/host/ina-host" --switch "127.0.0.1:$port" --job $((40 + s)) \
            --rank "$r" --world "$world" --elements 8192 --density 0.5 --block 256 \
            --lanes 32 --rounds 30 --consistency "ssp:$s" --compute-us 2000 --straggle 0.2 \
            --seed "$s" --port "udp:drop=0.01,seed=$((r + 11))" --log-level warn \
            >"$tmp/s$s-h$r.log" 2>&1 &
        hosts+=("$!")
    done
    for ((r = 0; r < world; r++)); do
        if ! wait "${hosts[$r]}"; then
            echo "ssp:$s rank $r failed:"; cat "$tmp/s$s-h$r.log"; fail=1
        elif ! grep -q "received + residuals = gradients (bit-exact)" "$tmp/s$s-h$r.log"; then
            echo "ssp:$s rank $r: no conservation line:"; cat "$tmp/s$s-h$r.log"; fail=1
        fi
    done
    head -1 "$tmp/s$s-h0.log"
}
run 1
run 2
kill -USR1 "$sw"; sleep 0.3
partial=$(awk '$1 == "results_partial" { v = $2 } END { print v + 0 }' "$tmp/switch.log")
late=$(awk '$1 == "ssp_late" { v = $2 } END { print v + 0 }' "$tmp/switch.log")
ahead=$(awk '$1 == "drop_ssp_ahead" { v = $2 } END { print v + 0 }' "$tmp/switch.log")
echo "switch: results_partial $partial, ssp_late $late, drop_ssp_ahead $ahead"
[ "$partial" -gt 0 ] || { echo "no block closed early"; fail=1; }
[ "$late" -gt 0 ] || { echo "no late packet answered"; fail=1; }
[ "$ahead" -eq 0 ] || { echo "a worker broke the bound"; fail=1; }

# A rank that joins the ssp:1 job as bsp is refused.
timeout 20 "$build/host/ina-host" --switch "127.0.0.1:$port" --job 50 --rank 0 --world 2 \
    --elements 512 --block 256 --lanes 2 --rounds 1 --consistency ssp:1 --timeout-ms 3000 \
    --log-level warn >"$tmp/m0.log" 2>&1 &
m0=$!
pids+=("$m0")
sleep 0.3
if timeout 20 "$build/host/ina-host" --switch "127.0.0.1:$port" --job 50 --rank 1 --world 2 \
    --elements 512 --block 256 --lanes 2 --rounds 1 --consistency bsp --timeout-ms 3000 \
    --log-level warn >"$tmp/m1.log" 2>&1; then
    echo "a bsp rank joined an ssp job"; fail=1
fi
grep -q "consistency" "$tmp/m1.log" || { echo "no mismatch message:"; cat "$tmp/m1.log"; fail=1; }
# Rank 0 only held the job for rank 1 to be refused by; left alone it would
# wait out the switch's peer timeout (8 s) for rank 1 and fail.
kill "$m0" 2>/dev/null || true
wait "$m0" || true
kill -TERM "$sw"; wait "$sw" || true
if [ $fail -ne 0 ]; then
    echo "--- switch log"; cat "$tmp/switch.log"; exit 1
fi
echo "1 passed, 0 failed: ssp over UDP port $port"
