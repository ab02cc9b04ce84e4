#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration test: ina_poll() (tests/tools/api_poll_check.c) against
# ina-switch over UDP loopback, 1% injected loss at the switch's port: a
# progress thread polls while the main thread submits; every operation
# reported exactly once, in end order, with exact sums; then the switch
# killed under pending operations: they all end through ina_poll() with the
# context's error, and ina_poll() then returns it.
# Usage: api_poll_udp.sh BUILD_DIR UDP_PORT
set -euo pipefail
build=$1 port=$2
. "$(dirname "$0")/lib.sh"
lib_init
export INA_JOB_TOKEN="api-poll-$port"
start_switch "$tmp/switch.log" --listen "127.0.0.1:$port" --port-opts "drop=0.01,seed=7"
timeout 120 "$build/tests/api_poll_check" "127.0.0.1:$port"
kill "$sw"; wait "$sw" 2>/dev/null || true
start_switch "$tmp/switch2.log" --listen "127.0.0.1:$port" --port-opts "drop=0.01,seed=7"
timeout 60 "$build/tests/api_poll_check" "127.0.0.1:$port" kill "$sw"
wait "$sw" 2>/dev/null || true
echo "2 passed, 0 failed: ina_poll over UDP port $port"
