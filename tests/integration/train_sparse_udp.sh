#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration test: sparsified training through the switch, the README's
# headline run for one seed, at 30 epochs instead of 200 to stay short.
# ina-train's one-command run (its own ina-switch and four workers over UDP
# on loopback) trains the MLP (--hidden 64, 4810 parameters in 76 blocks of
# 64) dense, then with the sparsifier and the value filter on (--sparsify
# both: block top-k at density 0.04 of what passes the filter |v| >= 0.01,
# residual carry-over, and the result filter: a block whose average is under
# the bound comes back DEFERRED), same seed and rounds. The sparse run must
# send at most 10% of the dense run's gradient bytes (8.5%), have results
# deferred (blocks_deferred > 0; 116 or 117 in every run seen), keep the
# replicas identical and reach at least the dense accuracy - 0.03. One seed
# is noisy (sparse runs are not bit-reproducible, a test row is 0.28 point):
# seed 3 gave 0.9444 or 0.9472 against dense 0.9472 in every run seen, so 3
# points only catches training that broke. Top-k alone is covered by
# udp_api_sparsify.
# Usage: train_sparse_udp.sh BUILD_DIR UDP_PORT
set -euo pipefail
build=$1 port=$2
. "$(dirname "$0")/lib.sh"
lib_init
train=$build/train/ina-train
export INA_JOB_TOKEN="test-train-sparse-$port"
common=(--switch "127.0.0.1:$port" --workers 4 --hidden 64 --block 64 --lanes 8 --epochs 30
        --seed 3 --quiet)

run() {	# NAME ARGS...
    local name=$1; shift
    timeout 60 "$train" "${common[@]}" "$@" --report "$tmp/$name.json" >"$tmp/$name.log" 2>&1 ||
        { echo "ina-train $* failed:"; cat "$tmp/$name.log"; exit 1; }
    jq -c '{sparsifier, accuracy, rounds, bytes_sent, bytes_dense, density_sent, blocks_deferred,
            residual_norm, replicas_identical, seconds}' "$tmp/$name.json"
}
run dense --sparsify off
run both --sparsify both --density 0.04 --filter-b0 0.01

fail=0
dense_bytes=$(jq -r .bytes_sent "$tmp/dense.json")
dense_acc=$(jq -r .accuracy "$tmp/dense.json")
b=$tmp/both.json
jq -e --argjson db "$dense_bytes" '.bytes_sent <= 0.10 * $db' "$b" >/dev/null ||
    { echo "both: bytes_sent above 10% of dense ($dense_bytes)"; fail=1; }
jq -e '.blocks_deferred > 0' "$b" >/dev/null ||
    { echo "both: no result block came back deferred"; fail=1; }
jq -e --argjson da "$dense_acc" '.accuracy >= $da - 0.03' "$b" >/dev/null ||
    { echo "both: accuracy more than 0.03 below dense ($dense_acc)"; fail=1; }
jq -e '.replicas_identical == true and .hash_checks >= 1' "$b" >/dev/null ||
    { echo "both: replicas not checked identical"; fail=1; }
jq -e '.density_sent > 0 and .density_sent <= 0.05 and .residual_norm > 0' "$b" >/dev/null ||
    { echo "both: density_sent / residual_norm wrong"; fail=1; }
jq -e '.sparsifier == "both density 0.04 filter b0 0.01 decay 1"' "$b" >/dev/null ||
    { echo "both: sparsifier field wrong"; fail=1; }
jq -e '.sparsifier == "off" and .density_sent == 1 and .residual_norm == 0 and
       .blocks_deferred == 0 and .bytes_dense == .params * 4 * .rounds' "$tmp/dense.json" \
    >/dev/null || { echo "dense: sparsifier fields wrong"; fail=1; }
grep -q "blocks deferred [1-9]" "$tmp/both.log" ||
    { echo "both: no 'blocks deferred' in the summary line"; fail=1; }
[ $fail -eq 0 ] || exit 1
echo "1 passed, 0 failed: sparsified ina-train (top-k + filter, deferred results) over UDP port $port"
