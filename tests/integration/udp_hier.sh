#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration test of hierarchical aggregation over UDP on loopback: a spine
# ina-switch, two rack ina-switches with --uplink to it, and four workers
# (hier_check: the public API, two per rack) that check every round's sum of
# the whole job exactly. Then the bytes per tier on dense data: what each
# rack sent the spine (its DATA: header + partial sum) against what the
# four workers sent their racks; each rack's uplink carries about a quarter
# of the four host links together (0.25 without retransmissions; the test
# accepts 0.18 .. 0.35, as both sides resend under loss and load).
# With MODE 'tenants', every switch runs in tenant mode (--tenants, the same
# file), the racks name the job's tenant (--uplink-job carol:42=K/2), the
# workers are tenant carol's, and every packet of every tier is tagged: no
# switch may drop one of them on its tag. The switches run with per-tenant
# receive queues (tenant_queues=4): carol's packets arrive in queue 3.
# Usage: udp_hier.sh BUILD_DIR BASE_PORT FAULTS ENCODING [MODE]
# (ports BASE_PORT, +1, +2; FAULTS: port options, e.g. drop=0.01, or 0)
set -euo pipefail
build=$1 base=$2 faults=$3 enc=$4 mode=${5:-token}
[[ $faults =~ ^[0-9.]+$ ]] && faults="drop=$faults"
spine=$base rack0=$((base + 1)) rack1=$((base + 2))
. "$(dirname "$0")/lib.sh"
lib_init
job0=42 job1=42 tenant_opts=() qopts=
if [ "$mode" = tenants ]; then
    tenant_mode 256
    job0=carol:42 job1=3:42 # by name and by index
    qopts=,tenant_queues=4  # carol (index 3) in queue 3 of every switch
else
    export INA_JOB_TOKEN="test-hier-$base"
fi
fail=0
# Bad rack options: a clear error and exit 2, before anything is served.
for bad in "--uplink 127.0.0.1:$spine" "--uplink-job 42=0/2" \
    "--uplink 127.0.0.1:$spine --uplink-job 42=2/2" \
    "--uplink 127.0.0.1:$spine --uplink-job 42=0/2 --primary 127.0.0.1:$rack1" \
    "--uplink 127.0.0.1:$spine --uplink-job carol:42=0/2"; do
    rc=0
    timeout 10 "$build/switch_sim/ina-switch" --listen "127.0.0.1:$rack0" $bad >"$tmp/bad.log" 2>&1 || rc=$?
    grep -q -- '--uplink' "$tmp/bad.log" && [ $rc = 2 ] ||
        { echo "ina-switch $bad: exit $rc, want 2 and a sentence naming --uplink:"; cat "$tmp/bad.log"; fail=1; }
done
# start_switch returns once a switch says "serving", its signal handlers in
# place (the SIGUSR1 below would kill one that has not got there yet).
swopts=(--log-level info --linger-ms 300 "${tenant_opts[@]}")
if [ "$mode" = tenants ]; then
    # A rack's job unnamed, or of a tenant the file lacks: refused.
    for bad in "42=0/2" "dave:42=0/2" "9:42=0/2" "carol:16777216=0/2"; do
        rc=0
        timeout 10 "$build/switch_sim/ina-switch" "${swopts[@]}" --listen "127.0.0.1:$rack0" \
            --uplink "127.0.0.1:$spine" --uplink-job "$bad" >"$tmp/bad.log" 2>&1 || rc=$?
        grep -q -- '--uplink-job' "$tmp/bad.log" && [ $rc = 2 ] ||
            { echo "tenant mode, --uplink-job $bad: exit $rc, want 2 and a sentence:"; cat "$tmp/bad.log"; fail=1; }
    done
fi
start_switch "$tmp/spine.log" "${swopts[@]}" --listen "127.0.0.1:$spine" --port-opts "$faults,seed=3$qopts"
spine_pid=$sw
start_switch "$tmp/rack0.log" "${swopts[@]}" --listen "127.0.0.1:$rack0" --port-opts "$faults,seed=5$qopts" \
    --uplink "127.0.0.1:$spine" --uplink-job "$job0=0/2"
rack_pid[0]=$sw
start_switch "$tmp/rack1.log" "${swopts[@]}" --listen "127.0.0.1:$rack1" --port-opts "$faults,seed=9$qopts" \
    --uplink "127.0.0.1:$spine" --uplink-job "$job1=1/2"
rack_pid[1]=$sw
# Sparse rounds (the racks' next pointers differ), then dense ones for bytes.
for run in sparse dense; do
    if [ $run = sparse ]; then density=0.3 rounds=6; else density=1 rounds=4; fi
    # Fresh counters per run: SIGUSR1 prints them; the dense run's are the
    # difference of two snapshots.
    for k in 0 1; do kill -USR1 "${rack_pid[$k]}"; done
    sleep 0.2
    if ! timeout 120 "$build/tests/hier_check" "$enc" $rounds 20000 $density "udp:$faults,seed=$RANDOM" \
        "127.0.0.1:$rack0/2" "127.0.0.1:$rack1/2" >"$tmp/$run.out" 2>"$tmp/$run.err"; then
        echo "$run run failed:"; cat "$tmp/$run.err"; fail=1
    fi
    cat "$tmp/$run.out"
    sleep 0.5    # the racks' FIN to the spine and its FIN_ACK
done
for k in 0 1; do kill -USR1 "${rack_pid[$k]}"; done
kill -USR1 "$spine_pid"
sleep 0.3
# The last two snapshots of a rack: counters before and after the dense run.
snap() { awk -v n="$2" '/ina-switch stats/ { s++ } s == n' "$tmp/rack$1.log"; }
cnt() { awk -v k="$1" '$1 == k { v = $2 } END { print v + 0 }'; }
host_bytes=$(awk '{ for (i = 1; i < NF; i++) if ($i == "bytes_sent") s += $(i + 1) } END { print s + 0 }' "$tmp/dense.out")
total_up=0
for k in 0 1; do
    before=$(snap $k 2) after=$(snap $k 3)
    d=$(( $(echo "$after" | cnt up_data) - $(echo "$before" | cnt up_data) ))
    b=$(( $(echo "$after" | cnt up_bytes) - $(echo "$before" | cnt up_bytes) ))
    j=$(( $(echo "$after" | cnt up_joins) - $(echo "$before" | cnt up_joins) ))
    f=$(( $(echo "$after" | cnt up_fins) - $(echo "$before" | cnt up_fins) ))
    # DATA: 56-byte header + payload; JOIN 64 bytes; FIN 56.
    up=$((d * 56 + b + j * 64 + f * 56))
    total_up=$((total_up + up))
    echo "rack $k -> spine (dense run): $d DATA, $b payload bytes, $up bytes in all"
    awk -v u="$up" -v h="$host_bytes" -v k=$k 'BEGIN {
        r = u / h; printf "rack %d uplink / four host links = %.3f\n", k, r; exit !(r > 0.18 && r < 0.35) }' ||
        { echo "rack $k: the uplink does not carry about a quarter"; fail=1; }
done
echo "hosts -> racks (dense run, four links): $host_bytes bytes; racks -> spine: $total_up bytes"
# Every job is gone everywhere: the racks left the spine with FIN.
for f in spine rack0 rack1; do
    last=$(awk '/ina-switch stats/ { s = "" } { s = s $0 "\n" } END { printf "%s", s }' "$tmp/$f.log")
    echo "$last" | grep -q '^job ' && { echo "$f still holds a job:"; echo "$last"; fail=1; }
done
if [ "$mode" = tenants ]; then
    for f in spine rack0 rack1; do
        grep -q 'tenant mode' "$tmp/$f.log" || { echo "$f: not in tenant mode"; fail=1; }
        a=$(awk '/ina-switch stats/ { s = "" } { s = s $0 "\n" } END { printf "%s", s }' "$tmp/$f.log" | cnt drop_auth_fail)
        [ "$a" = 0 ] || { echo "$f dropped $a of the job's own packets on their tags"; fail=1; }
        q=$(awk '/ina-switch stats/ { s = "" } { s = s $0 "\n" } END { printf "%s", s }' "$tmp/$f.log" | cnt port_udp_rxq3_pkts)
        [ "$q" -gt 0 ] || { echo "$f: nothing received in carol's queue (3)"; fail=1; }
    done
fi
rf=$(awk '/ina-switch stats/ { s++ } s == 3' "$tmp/rack0.log" | cnt up_fins)
[ "$rf" -ge 2 ] || { echo "rack 0 sent $rf FINs upstream, want one per run"; fail=1; }
if [ $fail -ne 0 ]; then
    for f in spine rack0 rack1; do echo "--- $f log"; cat "$tmp/$f.log"; done
    exit 1
fi
echo "1 passed, 0 failed: spine + 2 racks + 4 workers, $faults, $enc, $mode mode"
