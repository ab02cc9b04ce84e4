#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration test: the block-sparse allreduce through the public API
# (tests/tools/api_blocks_check.c) against ina-switch over UDP loopback with
# 2% injected loss at the switch's port, in f32, i32 and bf16, then f32 over
# two switches (each carries a run of the tensor's blocks): the same bits as
# the dense form, only the union's blocks written, -ENOSPC and -EINVAL.
# Usage: api_blocks_udp.sh BUILD_DIR UDP_PORT
set -euo pipefail
build=$1 port=$2
. "$(dirname "$0")/lib.sh"
lib_init
export INA_JOB_TOKEN="api-blocks-$port"
a=127.0.0.1:$port b=127.0.0.1:$((port + 1))
for enc in f32 i32 bf16; do
    start_switch "$tmp/switch-$enc.log" --listen "$a" --port-opts "drop=0.02,seed=5"
    timeout 60 "$build/tests/api_blocks_check" "$a" $enc
    kill "$sw"; wait "$sw" 2>/dev/null || true
done
start_switch "$tmp/s0.log" --listen "$a" --port-opts "drop=0.02,seed=6"
start_switch "$tmp/s1.log" --listen "$b" --port-opts "drop=0.02,seed=7"
timeout 60 "$build/tests/api_blocks_check" "$a,$b" f32
echo "1 passed, 0 failed: the block-sparse allreduce through the API over UDP port $port"
