#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration test: the asynchronous API through libina (tests/tools/
# api_async_check.c) against ina-switch over UDP loopback, with 1% injected
# loss at the switch's port, under each scheduling policy: many tensors in
# flight, completion in the policy's order, exact sums, broadcast, barrier,
# the handle errors, max_pending, two threads on one context; and the
# sparsifier and block planner per operation with many in flight (no update
# lost); and small tensors fused into one round (cfg.fuse_elems).
# Usage: api_async_udp.sh BUILD_DIR UDP_PORT
set -euo pipefail
build=$1 port=$2
. "$(dirname "$0")/lib.sh"
lib_init
export INA_JOB_TOKEN="api-async-$port"
for policy in fifo priority magnitude; do
    start_switch "$tmp/switch-$policy.log" --listen "127.0.0.1:$port" --port-opts "drop=0.01,seed=5"
    timeout 90 "$build/tests/api_async_check" "127.0.0.1:$port" $policy
    timeout 90 "$build/tests/api_async_check" "127.0.0.1:$port" $policy sparse
    timeout 90 "$build/tests/api_async_check" "127.0.0.1:$port" $policy fuse
    kill "$sw"; wait "$sw" 2>/dev/null || true
done
echo "9 passed, 0 failed: the asynchronous API over UDP port $port"
