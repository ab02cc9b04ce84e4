#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration test over DPDK: one ina-switch with WORLD net_memif server
# interfaces on one socket (--port dpdk:port=all) and WORLD ina-host
# processes, each a memif client, as separate processes (no hugepages, no
# NIC). Every sum must verify (bit-exact on synthetic data), every worker must
# hold the same bits, and every report must say transport "dpdk", so the test
# cannot pass on UDP. DROP_RATE > 0 injects loss in every port (drop=RATE).
# Exits 77 (skip) with the reason when DPDK cannot run here at all, unless
# INA_REQUIRE_DPDK=1 (CI), which turns that into a failure.
# FAULTS=OPTS adds fault options (faults.h, e.g. corrupt=0.02 or
# dup=0.05,reorder=0.05) to every port; with corrupt= the switch must have
# dropped corrupted frames on their UDP checksum (port_csum_bad > 0).
# With CAPTURE_DIR set, the switch and every host also write captures there
# (switch.pcap, h0.pcap, ...), for dpdk_capture.sh.
# LCORES=K > 1: the switch runs on lcores 0-1 with --lcores K (K partitions,
# partition P on queue P of every memif), the hosts open their memif with K
# queue pairs (queue=all,queues=K: rx on every queue, tx on queue 0), and
# every partition must have done work (its own line in the switch's counters).
# SW_LCORE_LIST=0 puts every partition on one lcore (they run in turn). The
# switch takes no --capture then (one pipeline's only); the hosts still do.
# MTU=BYTES (jumbo frames, e.g. 9000) adds mtu= to every port and bsize= to
# every memif vdev (a frame must fit one memif buffer: MTU + 14 rounded up to
# 1 KiB, or BSIZE=), after checking that a switch without bsize= refuses to
# start and says so. Every run checks that the switch received no more ina
# packets than the hosts sent (x2, + 64): frames split over several memif
# buffers once made memif replay its ring (millions of stale frames).
# The hosts are zero-copy memif clients (zero-copy=yes, --single-file-segments:
# the switch copies from and into their own buffers), as docs/DPDK.md runs
# them; ZERO_COPY=0 makes them copying clients.
# Usage: [LCORES=K] [MTU=BYTES] dpdk_memif.sh BUILD_DIR DROP_RATE ENCODING [extra ina-host args...]
set -euo pipefail
build=$1 drop=$2 enc=$3
shift 3
world=${WORLD:-4}
lcores=${LCORES:-1}
tag=ina-t$$
sock=/tmp/ina-memif-$$-0.sock
prefixes=("$tag-probe" "$tag-sw")
for ((r = 0; r < world; r++)); do prefixes+=("$tag-h$r"); done
. "$(dirname "$0")/lib.sh"
lib_init
lib_at_exit() {
    for p in "${prefixes[@]}"; do rm -rf "/var/run/dpdk/$p"; done
    rm -f "$sock"
}

. "$(dirname "$0")/dpdk_lib.sh"

eal=(--no-huge -m 256 --no-pci --no-telemetry --log-level=lib.eal:warning)
probe_eal "$build/switch_sim/ina-switch" "$tag-probe" "${eal[@]}"

export INA_JOB_TOKEN="dpdk-memif-$$"
opts="" vopts=""
[ "$drop" != 0 ] && opts=",drop=$drop,seed=7"
[ -n "${FAULTS:-}" ] && opts+=",$FAULTS"
if [ -n "${MTU:-}" ]; then
    # Without bsize= the switch must refuse jumbo frames, naming bsize=.
    rm -f "$sock"
    rc=0
    timeout 30 "$build/switch_sim/ina-switch" "${eal[@]}" --file-prefix="$tag-sw" -l 1 \
        "--vdev=net_memif0,role=server,id=0,socket=$sock" \
        -- --port "dpdk:port=all,ip=10.77.0.1,mtu=$MTU" >"$tmp/nobsize.log" 2>&1 || rc=$?
    if [ $rc -ne 3 ] || ! grep -q "bsize=" "$tmp/nobsize.log"; then
        echo "a switch with mtu=$MTU and memif's default bsize exited $rc, want 3 naming bsize=:"
        cat "$tmp/nobsize.log"; exit 1
    fi
    rm -rf "/var/run/dpdk/$tag-sw"
    opts+=",mtu=$MTU"
    vopts=",bsize=${BSIZE:-$(((MTU + 14 + 1023) / 1024 * 1024))}"
fi
host_eal=("${eal[@]}") zc=""
if [ "${ZERO_COPY:-1}" = 1 ]; then
    host_eal+=(--single-file-segments) zc=",zero-copy=yes"
fi
sw_lcores=(-l 1) sw_opts=() host_q=""
if [ "$lcores" -gt 1 ]; then
    sw_lcores=(-l "${SW_LCORE_LIST:-0-1}") sw_opts=(--lcores "$lcores") host_q=",queue=all,queues=$lcores"
fi
vdevs=()
for ((r = 0; r < world; r++)); do
    vdevs+=("--vdev=net_memif$r,role=server,id=$r,socket=$sock$vopts")
done
rm -f "$sock"
sw_cap=()
[ -n "${CAPTURE_DIR:-}" ] && [ "$lcores" -eq 1 ] && sw_cap=(--capture "$CAPTURE_DIR/switch.pcap")
start_switch "$tmp/switch.log" "${eal[@]}" --file-prefix="$tag-sw" "${sw_lcores[@]}" "${vdevs[@]}" \
    -- --port "dpdk:port=all,ip=10.77.0.1$opts" "${sw_opts[@]}" --log-level info \
    "${sw_cap[@]}"

hosts=()
for ((r = 0; r < world; r++)); do
    timeout 80 "$build/host/ina-host" "${host_eal[@]}" --file-prefix="$tag-h$r" -l 0 \
        "--vdev=net_memif0,role=client,id=$r,socket=$sock$vopts$zc" \
        -- --port "dpdk:port=0,ip=10.77.0.$((r + 2)),link_wait_ms=5000$host_q$opts" \
        --switch 10.77.0.1:9150 --job 42 --rank "$r" --world "$world" --encoding "$enc" \
        --report "$tmp/r$r.json" --quiet --log-level warn \
        ${CAPTURE_DIR:+--capture "$CAPTURE_DIR/h$r.pcap"} "$@" >"$tmp/h$r.log" 2>&1 &
    hosts+=("$!")
    pids+=("$!")
done
fail=0
wait_hosts "${hosts[@]}"
stop_switch "$sw"
for ((r = 0; r < world; r++)); do check_report $r dpdk; done
if [ $fail -eq 0 ]; then
    check_same_bits
    # Loss was really injected, and repaired.
    if [ "$drop" != 0 ]; then
        inj=$(jq -s '[.[].injected_drops] | add' "$tmp"/r*.json)
        retx=$(jq -s '[.[].retransmits] | add' "$tmp"/r*.json)
        [ "$inj" -gt 0 ] && [ "$retx" -gt 0 ] ||
            { echo "drop=$drop injected $inj drops and caused $retx retransmits: want both > 0"; fail=1; }
    fi
fi
[ -n "${CAPTURE_DIR:-}" ] && cp "$tmp/switch.log" "$CAPTURE_DIR/switch.log"
jq -c '{rank, transport, rounds, verified, retransmits, injected_drops, seconds, packets_sent}' \
    "$tmp"/r*.json || true
# No storm: the switch got about what the hosts sent (retransmits included).
# The final counters, after the SIGUSR1 snapshot; with LCORES > 1 the port
# counters of partition 0, which receives from the hosts.
stats=$(awk '/ina-switch stats/ { n++ } n == 2' "$tmp/switch.log")
counter() { echo "$stats" | awk -v k="$1" '$1 == k { v = $2 } END { print v + 0 }'; }
if [ $fail -eq 0 ]; then
    sent=$(jq -s '[.[].packets_sent] | add' "$tmp"/r*.json)
    # Frames dropped on their checksum (corrupt=) are malformed, not junk.
    got=$(counter port_rx_pkts)
    junk=$(($(counter port_not_ip) + $(counter port_malformed) - $(counter port_csum_bad)))
    if [ "$lcores" -gt 1 ]; then
        got=$(echo "$stats" | sed -nE 's/^  partition 0 lcore.*port rx ([0-9]+) .*/\1/p' | tail -1)
        got=${got:-0}
    fi
    echo "hosts sent $sent ina packets, the switch received $got (not_ip + malformed: $junk)"
    if [ "$got" -gt $((2 * sent + 64)) ] || [ "$junk" -gt 0 ]; then
        echo "packet storm: want at most $((2 * sent + 64)) received and no junk frames"; fail=1
    fi
fi
for kv in ${FAULTS:+${FAULTS//,/ }}; do
    k=${kv%%=*}
    case $k in dup | reorder | delay) ;; *) continue ;; esac
    [ "$(counter "port_inject_$k")" -gt 0 ] || { echo "$kv: the switch injected no $k"; fail=1; }
done
if [[ ",${FAULTS:-}" == *,corrupt=* ]] && [ $fail -eq 0 ]; then
    bad=$(counter port_csum_bad) flipped=$(counter port_inject_corrupt)
    echo "the switch flipped bits in $flipped frames and dropped $bad on their UDP checksum"
    [ "$bad" -gt 0 ] && [ "$bad" -eq "$flipped" ] ||
        { echo "corrupt=: want port_csum_bad > 0 and equal to port_inject_corrupt"; fail=1; }
fi
if [ "$lcores" -gt 1 ] && [ $fail -eq 0 ]; then
    # The final counters (after the SIGUSR1 snapshot): one line per partition,
    # "  partition P lcore L: port rx R tx T ...; steered out O in I ...".
    # Each must have sent results, partition 0 must have received from the
    # hosts, and the others must have been steered DATA: the sums cannot
    # have come from one partition.
    grep -q "ina-switch stats: $lcores partitions" "$tmp/switch.log" ||
        { echo "no counters of $lcores partitions"; fail=1; }
    for ((p = 0; p < lcores; p++)); do
        line=$(grep "^  partition $p lcore" "$tmp/switch.log" | tail -1)
        read -r rx tx sin < <(echo "$line" |
            sed -E 's/.*port rx ([0-9]+) tx ([0-9]+).*steered out [0-9]+ in ([0-9]+).*/\1 \2 \3/')
        echo "partition $p: port rx ${rx:-?} tx ${tx:-?}, steered in ${sin:-?}"
        if [ -z "$line" ] || [ "${tx:-0}" -eq 0 ] || { [ $p -eq 0 ] && [ "${rx:-0}" -eq 0 ]; } ||
            { [ $p -gt 0 ] && [ $((${rx:-0} + ${sin:-0})) -eq 0 ]; }; then
            echo "partition $p did no work: '$line'"; fail=1
        fi
    done
fi
if [ $fail -ne 0 ]; then
    echo "--- switch log"; cat "$tmp/switch.log"; exit 1
fi
echo "$stats" | grep -E "transport|port_|arp|icmp" || true
echo "1 passed, 0 failed: dpdk memif, world $world, drop $drop, $enc, switch lcores $lcores${MTU:+, mtu $MTU, ${vopts#,}}"
