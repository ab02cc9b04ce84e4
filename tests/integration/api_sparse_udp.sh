#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration test: the sparsifier through the public API (tests/tools/
# api_sparse_check.c) against ina-switch over UDP loopback, with 2% injected
# loss at the switch's port, for top-k, the filter and both: no update lost, 'in'
# untouched, stats and errors as documented.
# Usage: api_sparse_udp.sh BUILD_DIR UDP_PORT
set -euo pipefail
build=$1 port=$2
. "$(dirname "$0")/lib.sh"
lib_init
export INA_JOB_TOKEN="api-sparse-$port"
for mode in topk filter both; do
    start_switch "$tmp/switch-$mode.log" --listen "127.0.0.1:$port" --port-opts "drop=0.02,seed=7"
    timeout 60 "$build/tests/api_sparse_check" "127.0.0.1:$port" $mode
    kill "$sw"; wait "$sw" 2>/dev/null || true
done
echo "1 passed, 0 failed: the sparsifier through the API over UDP port $port"
