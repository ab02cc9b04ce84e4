#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration test: sparsified training through the switch. ina-train's
# one-command run (its own ina-switch and four workers over UDP on loopback)
# trains the MLP (--hidden 64, 4810 parameters, blocks of 64) dense, then with
# block top-k at density 0.03 and residual carry-over (--sparsify topk), same
# seed and rounds. The sparse run must send at most 10% of the dense run's
# gradient bytes on the wire, reach at least the dense accuracy - 0.02, and
# keep the replicas identical; the report must name the sparsifier and give
# density_sent and residual_norm. Then --sparsify both (filter + top-k) must
# train too.
# Usage: train_sparse_udp.sh BUILD_DIR UDP_PORT
set -euo pipefail
build=$1 port=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
train=$build/train/ina-train
export INA_JOB_TOKEN="test-train-sparse-$port"
common=(--switch "127.0.0.1:$port" --workers 4 --hidden 64 --block 64 --lanes 8 --epochs 30
        --seed 3 --quiet)

run() {	# NAME ARGS...
    local name=$1; shift
    timeout 60 "$train" "${common[@]}" "$@" --report "$tmp/$name.json" >"$tmp/$name.log" 2>&1 ||
        { echo "ina-train $* failed:"; cat "$tmp/$name.log"; exit 1; }
    jq -c '{sparsifier, accuracy, rounds, bytes_sent, bytes_dense, density_sent, residual_norm,
            replicas_identical, seconds}' "$tmp/$name.json"
}
run dense --sparsify off
run topk --sparsify topk --density 0.03
run both --sparsify both --density 0.04 --filter-b0 0.002 --filter-decay 0.999

fail=0
dense_bytes=$(jq -r .bytes_sent "$tmp/dense.json")
dense_acc=$(jq -r .accuracy "$tmp/dense.json")
for s in topk both; do
    jq -e --argjson db "$dense_bytes" '.bytes_sent <= 0.10 * $db' "$tmp/$s.json" >/dev/null ||
        { echo "$s: bytes_sent above 10% of dense ($dense_bytes)"; fail=1; }
    jq -e --argjson da "$dense_acc" '.accuracy >= $da - 0.02' "$tmp/$s.json" >/dev/null ||
        { echo "$s: accuracy more than 0.02 below dense ($dense_acc)"; fail=1; }
    jq -e '.replicas_identical == true and .hash_checks >= 1' "$tmp/$s.json" >/dev/null ||
        { echo "$s: replicas not checked identical"; fail=1; }
    jq -e '.density_sent > 0 and .density_sent <= 0.05 and .residual_norm > 0' \
        "$tmp/$s.json" >/dev/null || { echo "$s: density_sent / residual_norm wrong"; fail=1; }
done
jq -e '.sparsifier == "off" and .density_sent == 1 and .residual_norm == 0' "$tmp/dense.json" \
    >/dev/null || { echo "dense: sparsifier fields wrong"; fail=1; }
jq -e '.sparsifier == "topk density 0.03"' "$tmp/topk.json" >/dev/null ||
    { echo "topk: sparsifier field wrong"; fail=1; }
[ $fail -eq 0 ] || exit 1
echo "1 passed, 0 failed: sparsified ina-train over UDP port $port"
