#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration test: libina's ina_dpdk_start() (tests/tools/api_dpdk_check.c):
# an ina-switch with WORLD net_memif server interfaces and WORLD ranks, each a
# process that starts EAL through the library with its own memif client vdev
# (no hugepages, no NIC) and allreduces over the "dpdk:" port; then the error
# cases (EAL options that cannot start, a dpdk port without EAL). Exits 77
# (skip) when DPDK cannot run here, unless INA_REQUIRE_DPDK=1.
# Usage: api_dpdk_memif.sh BUILD_DIR
set -euo pipefail
build=$1
world=2
tag=ina-a$$
sock=/tmp/ina-memif-api-$$.sock
prefixes=("$tag-probe" "$tag-sw" ina-api-bad)
for ((r = 0; r < world; r++)); do prefixes+=("$tag-h$r"); done
. "$(dirname "$0")/lib.sh"
lib_init
lib_at_exit() {
    for p in "${prefixes[@]}"; do rm -rf "/var/run/dpdk/$p" "${XDG_RUNTIME_DIR:-/tmp}/dpdk/$p"; done
    rm -f "$sock"
}

. "$(dirname "$0")/dpdk_lib.sh"

eal=(--no-huge -m 256 --no-pci --no-telemetry --log-level=lib.eal:warning)
probe_eal "$build/switch_sim/ina-switch" "$tag-probe" "${eal[@]}"
export INA_JOB_TOKEN="api-dpdk-$$"
vdevs=()
for ((r = 0; r < world; r++)); do
    vdevs+=("--vdev=net_memif$r,role=server,id=$r,socket=$sock")
done
rm -f "$sock"
start_switch "$tmp/switch.log" "${eal[@]}" --file-prefix="$tag-sw" -l 1 "${vdevs[@]}" \
    -- --port "dpdk:port=all,ip=10.77.0.1" --log-level info
hosts=()
for ((r = 0; r < world; r++)); do
    timeout 60 "$build/tests/api_dpdk_check" $r $world 10.77.0.1:9150 \
        "dpdk:port=0,ip=10.77.0.$((r + 2)),link_wait_ms=5000" \
        -- "${eal[@]}" --file-prefix="$tag-h$r" -l 0 \
        "--vdev=net_memif0,role=client,id=$r,socket=$sock" >"$tmp/h$r.log" 2>&1 &
    hosts+=("$!")
    pids+=("$!")
done
fail=0
wait_hosts "${hosts[@]}"
stop_switch "$sw"
cat "$tmp"/h*.log | grep -E "^rank" || true
# EAL's own leftovers after a failed start are DPDK's, not ina's (ASan build).
LSAN_OPTIONS="suppressions=$(dirname "$0")/lsan_dpdk_eal.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}" \
    timeout 60 "$build/tests/api_dpdk_check" bad >"$tmp/bad.log" 2>&1 || {
    echo "the error cases failed:"; cat "$tmp/bad.log"; fail=1; }
grep -vE "^EAL|^ +-|^$" "$tmp/bad.log" | grep -E "^(an|a |again)" || true
[ $fail -eq 0 ] && echo "2 passed, 0 failed: ina_dpdk_start over memif"
exit $fail
