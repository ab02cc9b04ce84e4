#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration test: the sparsifier through the public API (tests/tools/
# api_sparse_check.c) against ina-switch over UDP loopback, with 2% injected
# loss at the switch's port, for top-k, the filter and both: no update lost, 'in'
# untouched, stats and errors as documented.
# Usage: api_sparse_udp.sh BUILD_DIR UDP_PORT
set -euo pipefail
build=$1 port=$2
sw=""
trap '[ -n "$sw" ] && kill "$sw" 2>/dev/null; wait 2>/dev/null || true' EXIT
export INA_JOB_TOKEN="api-sparse-$port"
for mode in topk filter both; do
    "$build/switch_sim/ina-switch" --listen "127.0.0.1:$port" --port-opts "drop=0.02,seed=7" \
        --log-level warn &
    sw=$!
    sleep 0.3
    timeout 60 "$build/tests/api_sparse_check" "127.0.0.1:$port" $mode
    kill "$sw"; wait "$sw" 2>/dev/null || true; sw=""
done
echo "1 passed, 0 failed: the sparsifier through the API over UDP port $port"
