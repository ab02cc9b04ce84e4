#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration test: ina-train's one-command run (its own ina-switch and four
# forked workers over UDP on loopback) trains softmax regression on the digits
# data: the JSON report must say test accuracy >= 0.9, replicas identical at
# every hash check, and the loss curve must have a row per round; the same for
# the small MLP (--hidden 32, no curve). Then a run
# where one worker's replica drifts by one ulp must fail, saying so.
# Usage: train_udp.sh BUILD_DIR UDP_PORT
set -euo pipefail
build=$1 port=$2
. "$(dirname "$0")/lib.sh"
lib_init
train=$build/train/ina-train
export INA_JOB_TOKEN="test-train-$port"

timeout 60 "$train" --switch "127.0.0.1:$port" --workers 4 --epochs 30 --seed 1 \
    --csv "$tmp/curve.csv" --report "$tmp/report.json" >"$tmp/run.log" 2>&1 ||
    { echo "ina-train failed:"; cat "$tmp/run.log"; exit 1; }
jq -c '{accuracy, rounds, hash_checks, replicas_identical, bytes_sent, bytes_dense, seconds}' \
    "$tmp/report.json"
fail=0
jq -e '.accuracy >= 0.9' "$tmp/report.json" >/dev/null ||
    { echo "accuracy below 0.9"; fail=1; }
jq -e '.replicas_identical == true and .hash_checks >= 1' "$tmp/report.json" >/dev/null ||
    { echo "replicas not checked identical"; fail=1; }
jq -e '.bytes_sent > 0 and .bytes_dense == .params * 4 * .rounds' "$tmp/report.json" \
    >/dev/null || { echo "bytes_sent / bytes_dense wrong"; fail=1; }
grep -q "replicas identical at all" "$tmp/run.log" || { echo "no identical-replicas line"; fail=1; }
rounds=$(jq -r .rounds "$tmp/report.json")
rows=$(($(wc -l <"$tmp/curve.csv") - 2))	# a header and round 0
[ "$rows" = "$rounds" ] || { echo "curve has $rows rows for $rounds rounds"; fail=1; }
[ "$(head -1 "$tmp/curve.csv")" = "round,train_loss,test_accuracy" ] ||
    { echo "curve header wrong"; fail=1; }

# The MLP (32 hidden units, 2410 parameters): 10 epochs reach 0.9 too.
timeout 60 "$train" --switch "127.0.0.1:$port" --hidden 32 --epochs 10 --seed 2 --quiet \
    --report "$tmp/mlp.json" >"$tmp/mlp.log" 2>&1 ||
    { echo "ina-train --hidden 32 failed:"; cat "$tmp/mlp.log"; exit 1; }
jq -c '{model, accuracy, rounds, hash_checks}' "$tmp/mlp.json"
jq -e '.accuracy >= 0.9 and .replicas_identical == true and .params == 2410' "$tmp/mlp.json" \
    >/dev/null || { echo "MLP: accuracy below 0.9 or replicas not identical"; fail=1; }

# One ulp of drift in worker 2 after round 7: the check after round 10 fails loudly.
if timeout 60 "$train" --switch "127.0.0.1:$port" --epochs 2 --test-diverge 2:7 \
    >"$tmp/diverge.log" 2>&1; then
    echo "a diverged run exited 0"; fail=1
fi
grep -q "REPLICAS DIVERGED after round 10" "$tmp/diverge.log" ||
    { echo "no divergence message:"; cat "$tmp/diverge.log"; fail=1; }
if [ $fail -ne 0 ]; then
    echo "--- run log"; cat "$tmp/run.log"; exit 1
fi
echo "1 passed, 0 failed: ina-train over UDP port $port"
