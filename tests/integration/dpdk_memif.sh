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
# With CAPTURE_DIR set, the switch and every host also write captures there
# (switch.pcap, h0.pcap, ...), for dpdk_capture.sh.
# Usage: dpdk_memif.sh BUILD_DIR DROP_RATE ENCODING [extra ina-host args...]
set -euo pipefail
build=$1 drop=$2 enc=$3
shift 3
world=${WORLD:-4}
tag=ina-t$$
tmp=$(mktemp -d)
sock=/tmp/ina-memif-$$-0.sock
prefixes=("$tag-probe" "$tag-sw")
for ((r = 0; r < world; r++)); do prefixes+=("$tag-h$r"); done
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    sleep 0.2
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    for p in "${prefixes[@]}"; do rm -rf "/var/run/dpdk/$p"; done
    rm -f "$sock"
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

skip() {
    if [ "${INA_REQUIRE_DPDK:-0}" = 1 ]; then
        echo "FAIL (INA_REQUIRE_DPDK=1): $*"; exit 1
    fi
    echo "SKIP: $*"; exit 77
}

eal=(--no-huge -m 256 --no-pci --no-telemetry --log-level=lib.eal:warning)
# Can EAL start here at all? (A one-process probe: no multi-process socket.)
if ! out=$(timeout 30 "$build/switch_sim/ina-switch" "${eal[@]}" --no-shconf -l 0 \
        --file-prefix="$tag-probe" -- --help 2>&1); then
    skip "DPDK cannot start here: $(echo "$out" | grep -m1 'ina-switch:' || echo "$out" | tail -1)"
fi

export INA_JOB_TOKEN="dpdk-memif-$$"
opts=""
[ "$drop" != 0 ] && opts=",drop=$drop,seed=7"
vdevs=()
for ((r = 0; r < world; r++)); do
    vdevs+=("--vdev=net_memif$r,role=server,id=$r,socket=$sock")
done
rm -f "$sock"
"$build/switch_sim/ina-switch" "${eal[@]}" --file-prefix="$tag-sw" -l 1 "${vdevs[@]}" \
    -- --port "dpdk:port=all,ip=10.77.0.1$opts" --log-level info \
    ${CAPTURE_DIR:+--capture "$CAPTURE_DIR/switch.pcap"} >"$tmp/switch.log" 2>&1 &
sw=$!
pids+=("$sw")
# The memif server must be up before its clients start.
for ((i = 0; i < 100; i++)); do
    grep -q "serving" "$tmp/switch.log" && break
    kill -0 "$sw" 2>/dev/null || break
    sleep 0.1
done
if ! grep -q "serving" "$tmp/switch.log"; then
    echo "the switch did not start:"; cat "$tmp/switch.log"; exit 1
fi

hosts=()
for ((r = 0; r < world; r++)); do
    timeout 120 "$build/host/ina-host" "${eal[@]}" --file-prefix="$tag-h$r" -l 0 \
        "--vdev=net_memif0,role=client,id=$r,socket=$sock" \
        -- --port "dpdk:port=0,ip=10.77.0.$((r + 2)),link_wait_ms=5000$opts" \
        --switch 10.77.0.1:9150 --job 42 --rank "$r" --world "$world" --encoding "$enc" \
        --report "$tmp/r$r.json" --quiet --log-level warn \
        ${CAPTURE_DIR:+--capture "$CAPTURE_DIR/h$r.pcap"} "$@" >"$tmp/h$r.log" 2>&1 &
    hosts+=("$!")
    pids+=("$!")
done
fail=0
for ((r = 0; r < world; r++)); do
    rc=0
    wait "${hosts[$r]}" || rc=$?
    if [ $rc -ne 0 ]; then
        echo "rank $r failed (exit $rc):"; cat "$tmp/h$r.log"; fail=1
    fi
done
kill -USR1 "$sw"; sleep 0.2; kill -TERM "$sw"
rc=0; wait "$sw" || rc=$?
[ $rc -eq 0 ] || { echo "the switch exited with $rc"; fail=1; }
for ((r = 0; r < world; r++)); do
    [ -s "$tmp/r$r.json" ] || { echo "rank $r wrote no report"; fail=1; continue; }
    v=$(jq -r '.verified' "$tmp/r$r.json")
    [ "$v" = "true" ] || { echo "rank $r report says verified=$v"; fail=1; }
    t=$(jq -r '.transport' "$tmp/r$r.json")
    [ "$t" = "dpdk" ] || { echo "rank $r ran on transport '$t', not dpdk"; fail=1; }
done
if [ $fail -eq 0 ]; then
    # Every worker must hold the same bits every round.
    hashes=$(jq -s -r '[.[].per_round | map(.sum_hash)] | unique | length' "$tmp"/r*.json)
    [ "$hashes" = "1" ] || { echo "workers received different bits: $hashes distinct result sequences"; fail=1; }
    # Loss was really injected, and repaired.
    if [ "$drop" != 0 ]; then
        inj=$(jq -s '[.[].injected_drops] | add' "$tmp"/r*.json)
        retx=$(jq -s '[.[].retransmits] | add' "$tmp"/r*.json)
        [ "$inj" -gt 0 ] && [ "$retx" -gt 0 ] ||
            { echo "drop=$drop injected $inj drops and caused $retx retransmits: want both > 0"; fail=1; }
    fi
fi
[ -n "${CAPTURE_DIR:-}" ] && cp "$tmp/switch.log" "$CAPTURE_DIR/switch.log"
jq -c '{rank, transport, rounds, verified, retransmits, injected_drops, seconds}' "$tmp"/r*.json || true
if [ $fail -ne 0 ]; then
    echo "--- switch log"; cat "$tmp/switch.log"; exit 1
fi
awk '/ina-switch stats/ { n++ } n == 2' "$tmp/switch.log" | grep -E "transport|port_|arp|icmp" || true
echo "1 passed, 0 failed: dpdk memif, world $world, drop $drop, $enc"
