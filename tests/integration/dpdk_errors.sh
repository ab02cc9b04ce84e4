#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration test: when DPDK cannot start, ina-switch and ina-host print one
# clear line and exit with status 3 (the transport could not start) in
# bounded time, never crash: a dpdk port without EAL options, EAL options EAL
# refuses, ina options before the "--", a port id with no ethdev, a memif
# client whose server is not there, a link that stays down. Misused
# --lcores (no dpdk port, with --capture, with queue= in --port) is status 2. A switch address
# nobody answers ARP for is a failed join (status 2), in bounded time. Skips
# (77) when DPDK cannot start here at all, unless INA_REQUIRE_DPDK=1 (CI).
# Usage: dpdk_errors.sh BUILD_DIR
set -euo pipefail
build=$1
sw_bin=$build/switch_sim/ina-switch
host=$build/host/ina-host
tag=ina-e$$
. "$(dirname "$0")/lib.sh"
lib_init
lib_at_exit() {
    rm -rf /var/run/dpdk/"$tag"-*
    rm -f "/tmp/ina-memif-$$-0.sock"
}
export INA_JOB_TOKEN="dpdk-errors-$$"
eal=(--no-huge -m 256 --no-pci --no-telemetry --log-level=lib.eal:warning)

if [ "${INA_REQUIRE_DPDK:-0}" != 1 ] &&
    ! out=$(timeout 30 "$sw_bin" "${eal[@]}" --no-shconf -l 0 --file-prefix="$tag-probe" -- --help 2>&1); then
    echo "SKIP: DPDK cannot start here: $(echo "$out" | grep -m1 'ina-switch:' || echo "$out" | tail -1)"
    exit 77
fi

fail=0 passed=0
# expect NAME PATTERN command...: must exit $want (3 unless set) within 20 s
# and print PATTERN on a line of its own program ("ina-switch: ...").
expect() {
    local name=$1 pattern=$2 rc=0 code=${want:-3}
    shift 2
    timeout 20 "$@" >"$tmp/$name.log" 2>&1 || rc=$?
    if [ $rc -ne "$code" ] || ! grep -q "^ina-[a-z]*: .*$pattern" "$tmp/$name.log"; then
        echo "FAIL $name: exit $rc (want $code); output:"; cat "$tmp/$name.log"; fail=$((fail + 1))
    else
        echo "ok   $name: $(grep -m1 "^ina-[a-z]*: .*$pattern" "$tmp/$name.log")"
        passed=$((passed + 1))
    fi
}
hostargs=(--switch 10.77.0.1:9150 --job 1 --rank 0 --world 1 --block 256 --elements 1000)

expect switch_no_eal "needs EAL options" "$sw_bin" --port dpdk:port=0
expect host_no_eal "needs EAL options" "$host" --port dpdk:port=0 "${hostargs[@]}"
expect switch_bad_eal "cannot start DPDK" "$sw_bin" "${eal[@]}" --no-such-eal-option -l 0 \
    --file-prefix="$tag-a" -- --port dpdk:port=0
expect host_ina_opts_first "cannot start DPDK" "$host" "${eal[@]}" -l 0 --file-prefix="$tag-b" \
    --port dpdk:port=0 -- "${hostargs[@]}"
expect switch_no_ethdev "cannot open port" "$sw_bin" "${eal[@]}" -l 0 --file-prefix="$tag-c" \
    -- --port dpdk:port=0,ip=10.77.0.1
expect host_no_ethdev "cannot open port" "$host" "${eal[@]}" -l 0 --file-prefix="$tag-d" \
    -- --port dpdk:port=0,ip=10.77.0.2 "${hostargs[@]}"
rm -f "/tmp/ina-memif-$$-0.sock"
expect host_no_memif_server "cannot open port" "$host" "${eal[@]}" -l 0 --file-prefix="$tag-e" \
    "--vdev=net_memif0,role=client,id=0,socket=/tmp/ina-memif-$$-0.sock" \
    -- --port dpdk:port=0,ip=10.77.0.2 "${hostargs[@]}"
memif="--vdev=net_memif0,role=server,id=0,socket=/tmp/ina-memif-$$-0.sock"
expect switch_link_down "link" "$sw_bin" "${eal[@]}" -l 0 --file-prefix="$tag-f" "$memif" \
    -- --port dpdk:port=all,ip=10.77.0.1,link_wait_ms=300
# --lcores K > 1 is for dpdk ports only, without --capture, and sets the
# port's queue=/queues= itself: usage errors (status 2).
want=2 expect switch_lcores_udp "needs a dpdk port" "$sw_bin" --port udp --lcores 2
want=2 expect switch_lcores_capture "not with --lcores" "$sw_bin" "${eal[@]}" -l 0 \
    --file-prefix="$tag-h" -- --port dpdk:port=all --lcores 2 --capture "$tmp/x.pcap"
want=2 expect switch_lcores_queue "sets queue= and queues=" "$sw_bin" "${eal[@]}" -l 0 \
    --file-prefix="$tag-i" -- --port dpdk:port=all,queues=2 --lcores 2

# A switch at 10.77.0.1; the host asks ARP for 10.77.0.9, which nobody has.
start_switch "$tmp/switch.log" "${eal[@]}" -l 1 --file-prefix="$tag-sw" "$memif" \
    -- --port dpdk:port=all,ip=10.77.0.1 --log-level info
want=2 expect host_no_arp_answer "10.77.0.9:9150" "$host" "${eal[@]}" -l 0 --file-prefix="$tag-g" \
    "--vdev=net_memif0,role=client,id=0,socket=/tmp/ina-memif-$$-0.sock" \
    -- --port dpdk:port=0,ip=10.77.0.2,link_wait_ms=5000 --switch 10.77.0.9:9150 --job 1 \
    --rank 0 --world 1 --block 256 --elements 1000
echo "$passed passed, $fail failed"
[ $fail -eq 0 ]
