#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration test: a memif client whose first connection is refused still
# connects once the right server is there, in copy and in zero-copy mode. The
# first server on the socket has no interface of the host's id ("ID not
# found": memif tears the half-made connection down); it goes, a switch with
# that id comes, and the host must join, finish its rounds and verify them.
# DPDK 22.11's memif closes EAL's memory descriptor in that teardown, and a
# zero-copy client then shared a dead one on every retry (the switch printed
# "mmap failed: No such device" until link_wait_ms ran out); the dpdk port
# puts it back (common/src/memfd_guard_dpdk.c). Skips (77) when DPDK cannot
# start here, unless INA_REQUIRE_DPDK=1 (CI).
# Usage: dpdk_memif_reconnect.sh BUILD_DIR
set -euo pipefail
build=$1
sw_bin=$build/switch_sim/ina-switch
host=$build/host/ina-host
tag=ina-rc$$
sock=/tmp/ina-memif-rc$$.sock
. "$(dirname "$0")/dpdk_lib.sh"
lib_init
lib_at_exit() {
    rm -rf /var/run/dpdk/"$tag"-*
    rm -f "$sock"
}
export INA_JOB_TOKEN="dpdk-reconnect-$$"
eal=(--no-huge -m 256 --no-pci --no-telemetry --log-level=lib.eal:warning)
probe_eal "$sw_bin" "$tag-probe" "${eal[@]}"

# Each step on the output with its time, so that a run stopped by ctest's
# timeout says where it stood.
step() { echo "$(date +%T.%N | cut -c1-12) zero-copy=$zc: $*"; }
# stop PID WHAT: SIGTERM and a bounded wait; one that has not exited 20 s
# later is killed and fails the test (a switch must stop on SIGTERM).
stop() {
    kill "$1" 2>/dev/null || true
    if ! timeout 20 tail -s 0.1 --pid="$1" -f /dev/null; then
        echo "FAIL zero-copy=$zc: $2 did not exit 20 s after SIGTERM (killed)"
        kill -9 "$1" 2>/dev/null || true
        fail=$((fail + 1))
    fi
    wait "$1" 2>/dev/null || true
}

fail=0
for zc in no yes; do
    extra=()
    [ $zc = yes ] && extra=(--single-file-segments)
    rm -f "$sock"
    step "the wrong switch starts"
    start_switch "$tmp/wrong-$zc.log" "${eal[@]}" -l 1 --file-prefix="$tag-w$zc" \
        "--vdev=net_memif0,role=server,id=0,socket=$sock" -- --port dpdk:port=all,ip=10.77.0.1
    wrong=$sw
    step "the host starts"
    timeout 40 "$host" "${eal[@]}" "${extra[@]}" -l 0 --file-prefix="$tag-h$zc" \
        "--vdev=net_memif0,role=client,id=1,socket=$sock,zero-copy=$zc" \
        -- --port dpdk:port=0,ip=10.77.0.2,link_wait_ms=20000 --switch 10.77.0.1:9150 \
        --job 1 --rank 0 --world 1 --block 256 --elements 100000 --rounds 3 \
        --report "$tmp/r-$zc.json" >"$tmp/host-$zc.log" 2>&1 &
    h=$!
    pids+=("$h")
    # The host starts EAL and connects within a second, and is refused.
    sleep 2
    step "the wrong switch stops"
    stop "$wrong" "the wrong switch"
    rm -f "$sock"
    step "the right switch starts"
    start_switch "$tmp/right-$zc.log" "${eal[@]}" -l 1 --file-prefix="$tag-r$zc" \
        "--vdev=net_memif0,role=server,id=1,socket=$sock" -- --port dpdk:port=all,ip=10.77.0.1
    rc=0
    step "waiting for the host (at most 40 s from its start)"
    wait "$h" || rc=$?
    step "the host exited $rc; the switch stops"
    stop "$sw" "the right switch"
    mmap=$(grep -c "mmap failed" "$tmp/right-$zc.log" || true)
    if [ $rc -ne 0 ] || [ "$mmap" -ne 0 ] || ! grep -q '"verified": *true' "$tmp/r-$zc.json" 2>/dev/null; then
        echo "FAIL zero-copy=$zc: host exit $rc, $mmap mmap failures at the switch; host:"
        tail -5 "$tmp/host-$zc.log"
        echo "switch:"; sort "$tmp/right-$zc.log" | uniq -c | sort -rn | head -5
        fail=$((fail + 1))
    else
        echo "ok   zero-copy=$zc: refused once, then joined and verified: $(tail -1 "$tmp/host-$zc.log")"
    fi
done
exit $fail
