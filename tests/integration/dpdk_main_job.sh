#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The main job (scripts/main-job) on a small tensor, over DPDK memif with
# --require-dpdk, so it cannot pass on UDP: every sum verified, the summary
# names dpdk for both workloads. Skips (77) where DPDK cannot start here at
# all (main-job exits 3), unless INA_REQUIRE_DPDK=1 (CI).
# Usage: dpdk_main_job.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
rc=0
timeout 300 "$src/scripts/main-job" --require-dpdk --bin "$build" --elements 1048576 \
    --rounds 3 >"$out" 2>&1 || rc=$?
grep -v '^round' "$out" || true
if [ $rc -eq 3 ] && [ "${INA_REQUIRE_DPDK:-0}" != 1 ]; then
    echo "SKIP: DPDK cannot start here (main-job --require-dpdk exited 3)"; exit 77
fi
[ $rc -eq 0 ] || { echo "FAIL: main-job exited $rc"; exit 1; }
n=$(grep -c '^  transport: *dpdk$' "$out" || true)
[ "$n" = 2 ] || { echo "FAIL: $n of 2 workloads report transport dpdk"; exit 1; }
grep -q '^main job: every sum verified, over dpdk$' "$out" ||
    { echo "FAIL: no 'every sum verified, over dpdk'"; exit 1; }
echo "1 passed, 0 failed: main job over dpdk"
