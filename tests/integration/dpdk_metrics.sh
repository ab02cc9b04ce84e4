#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration test of ina-switch --metrics on a dpdk port, whose counters
# take other paths than on UDP: with LCORES=K > 1 (default 2) the switch
# runs K partitions on lcores 0-1 (run_lcores.c), and the scrape is answered
# by partition 0's lcore from every partition's published snapshot; with
# LCORES=1 the one loop reads a dpdk port (its ARP and ICMP counters too).
# Two memif hosts (one job of 2 ranks, as dpdk_memif.sh runs them), curl as
# the scraper. Checks: the text parses as format 0.0.4 (and with the
# Prometheus project's parser); transport "dpdk", K partitions; with rank 0
# alone the job's gauges say so; after the job, per-partition port and lcore
# counters (every partition sent results), ARP counters, the job's counts,
# and the same values as the SIGUSR1 dump.
# Exits 77 (skip) when DPDK cannot run here, unless INA_REQUIRE_DPDK=1.
# Usage: [LCORES=K] dpdk_metrics.sh BUILD_DIR
set -euo pipefail
build=$1
lcores=${LCORES:-2}
tag=ina-m$$
sock=/tmp/ina-memif-m$$-0.sock
prefixes=("$tag-probe" "$tag-sw" "$tag-h0" "$tag-h1")
. "$(dirname "$0")/lib.sh"
lib_init
lib_at_exit() {
    for p in "${prefixes[@]}"; do rm -rf "/var/run/dpdk/$p"; done
    rm -f "$sock"
}
fail() { echo "FAIL: $*"; [ -f "$tmp/switch.log" ] && { echo "--- switch log"; cat "$tmp/switch.log"; }; exit 1; }

. "$(dirname "$0")/dpdk_lib.sh"
. "$(dirname "$0")/metrics_lib.sh"
command -v curl >/dev/null || fail "curl is missing (scripts/deps installs it)"

eal=(--no-huge -m 256 --no-pci --no-telemetry --log-level=lib.eal:warning)
probe_eal "$build/switch_sim/ina-switch" "$tag-probe" "${eal[@]}"
mport=$(free_tcp_port) || fail "no free TCP port in 19100-19599"
url=http://127.0.0.1:$mport

export INA_JOB_TOKEN="dpdk-metrics-$$"
sw_lcores=(-l 1) sw_opts=() host_q=""
if [ "$lcores" -gt 1 ]; then
    sw_lcores=(-l 0-1) sw_opts=(--lcores "$lcores") host_q=",queue=all,queues=$lcores"
fi
rm -f "$sock"
start_switch "$tmp/switch.log" "${eal[@]}" --file-prefix="$tag-sw" "${sw_lcores[@]}" \
    "--vdev=net_memif0,role=server,id=0,socket=$sock" "--vdev=net_memif1,role=server,id=1,socket=$sock" \
    -- --port "dpdk:port=all,ip=10.77.0.1" "${sw_opts[@]}" --metrics "127.0.0.1:$mport" \
    --log-level info

m=$tmp/m0.txt
scrape "$m"
check_format "$m" || fail "the text of /metrics does not parse"
[ "$(metric 'ina_switch_info{transport="dpdk",role="switch"}')" = 1 ] || fail "ina_switch_info: not dpdk"
[ "$(metric ina_switch_partitions)" = "$lcores" ] || fail "partitions: $(metric ina_switch_partitions)"
[ "$(metric ina_switch_jobs)" = 0 ] || fail "jobs before any"

host() {
    timeout 80 "$build/host/ina-host" "${eal[@]}" --file-prefix="$tag-h$1" -l 0 \
        "--vdev=net_memif0,role=client,id=$1,socket=$sock" \
        -- --port "dpdk:port=0,ip=10.77.0.$(($1 + 2)),link_wait_ms=5000$host_q" \
        --switch 10.77.0.1:9150 --job 42 --rank "$1" --world 2 \
        --elements 50000 --density 0.5 --block 256 --lanes 8 --rounds 4 \
        --report "$tmp/r$1.json" --quiet --log-level warn >"$tmp/h$1.log" 2>&1
}
host 0 &
h0=$!
pids+=("$h0")
m=$tmp/m1.txt
for ((i = 0; i < 150; i++)); do
    scrape "$m"
    [ "$(metric 'ina_switch_job_round{job="42"}')" = 0 ] && break
    sleep 0.1
done
check_format "$m" || fail "the text with a job does not parse"
check_parser "$m"
# 8 lanes: ceil(8 / K) slots in each of the K partitions.
slots=$((( 8 + lcores - 1) / lcores * lcores))
for kv in 'ina_switch_jobs 1' 'ina_switch_job_world{job="42"} 2' \
    'ina_switch_job_ranks_joined{job="42"} 1' 'ina_switch_job_state{job="42",state="running"} 1' \
    'ina_switch_job_round{job="42"} 0' "ina_switch_job_slots{job=\"42\"} $slots"; do
    v=$(metric "${kv% *}")
    [ "$v" = "${kv##* }" ] || fail "rank 0 alone: ${kv% *} is $v, want ${kv##* }"
done
echo "rank 0 alone: job 42 joined 1 of 2, running, round 0, $slots slots over $lcores partition(s)"

fail=0
host 1 || { cat "$tmp/h1.log"; fail "rank 1 failed"; }
wait_hosts "$h0"
check_report 0 dpdk
check_report 1 dpdk
[ $fail -eq 0 ] || fail "the job failed"

m=$tmp/m2.txt
for ((i = 0; i < 50; i++)); do
    scrape "$m"
    [ "$(metric ina_switch_jobs)" = 0 ] && break
    sleep 0.1
done
check_format "$m" || fail "the text after the job does not parse"
joins=$(metric ina_switch_joins_total) fins=$(metric ina_switch_fins_total)
[ "$joins" -ge 2 ] && [ "$fins" -ge 2 ] || fail "JOINs $joins, FINs $fins: want 2 of each at least"
for kv in 'ina_switch_jobs 0' 'ina_switch_jobs_admitted_total 1' 'ina_switch_jobs_freed_total 1'; do
    v=$(metric "${kv% *}")
    [ "$v" = "${kv##* }" ] || fail "after the job: ${kv% *} is $v, want ${kv##* }"
done
sent=$(jq -s '[.[].packets_sent] | add' "$tmp"/r*.json)
rx=$(metric ina_switch_packets_received_total)
echo "ranks sent $sent packets; the pipelines received $rx, completed $(metric ina_switch_results_total) blocks"
[ "$rx" -ge "$sent" ] && [ "$(metric ina_switch_results_total)" -gt 0 ] || fail "packets or results"
arp=$(sum_metric 'ina_switch_port_arp_received_total(\{.*\})?')
[ "$arp" -gt 0 ] || fail "no ARP counted: the hosts resolved the switch"
if [ "$lcores" -gt 1 ]; then
    for ((p = 0; p < lcores; p++)); do
        tx=$(metric "ina_switch_port_sent_packets_total{partition=\"$p\"}")
        polls=$(sum_metric "ina_switch_lcore_polls_total\\{partition=\"$p\",lcore=\"[0-9]+\"\\}")
        echo "partition $p: port sent $tx, polls $polls"
        [ "$tx" != none ] && [ "$tx" -gt 0 ] || fail "partition $p sent no result"
        [ "$polls" -gt 0 ] || fail "partition $p: no lcore counters"
    done
    [ "$(metric 'ina_switch_port_received_packets_total{partition="0"}')" -gt 0 ] ||
        fail "partition 0 received nothing"
    [ "$(metric 'ina_switch_lcore_steered_total{direction="in",partition="1",lcore="1"}')" -gt 0 ] ||
        fail "partition 1 (lcore 1) was steered no DATA"
fi

# The same values as the SIGUSR1 dump (the switch is idle now).
kill -USR1 "$sw"
for ((i = 0; i < 30; i++)); do
    grep -q "ina-switch stats" "$tmp/switch.log" && break
    sleep 0.1
done
sleep 0.2
m=$tmp/m3.txt
scrape "$m"
dump=$(awk '/ina-switch stats/ { n++ } n == 1' "$tmp/switch.log")
compared=0
for kv in rx_pkts=ina_switch_packets_received_total tx_pkts=ina_switch_packets_sent_total \
    results=ina_switch_results_total joins=ina_switch_joins_total fins=ina_switch_fins_total \
    jobs_admitted=ina_switch_jobs_admitted_total; do
    k=${kv%%=*}
    d=$(echo "$dump" | awk -v k="$k" '$1 == k { v = $2 } END { print v + 0 }')
    v=$(metric "${kv#*=}")
    [ "$d" = "$v" ] || fail "SIGUSR1 says $k $d, /metrics says ${kv#*=} $v"
    compared=$((compared + 1))
done
if [ "$lcores" -gt 1 ]; then
    for ((p = 0; p < lcores; p++)); do
        read -r drx dtx < <(echo "$dump" | grep "^  partition $p lcore" |
            sed -E 's/.*port rx ([0-9]+) tx ([0-9]+).*/\1 \2/')
        [ "$drx" = "$(metric "ina_switch_port_received_packets_total{partition=\"$p\"}")" ] &&
            [ "$dtx" = "$(metric "ina_switch_port_sent_packets_total{partition=\"$p\"}")" ] ||
            fail "partition $p: SIGUSR1 says port rx $drx tx $dtx, /metrics does not"
        compared=$((compared + 2))
    done
else
    for kv in port_rx_pkts=ina_switch_port_received_packets_total \
        port_tx_pkts=ina_switch_port_sent_packets_total port_arp_rx=ina_switch_port_arp_received_total; do
        k=${kv%%=*}
        d=$(echo "$dump" | awk -v k="$k" '$1 == k { v = $2 } END { print v + 0 }')
        [ "$d" = "$(metric "${kv#*=}")" ] || fail "SIGUSR1 says $k $d, /metrics does not"
        compared=$((compared + 1))
    done
fi
echo "SIGUSR1 and /metrics agree on $compared counters"
check_parser "$m"

fail=0
stop_switch "$sw"
[ $fail -eq 0 ] || fail "the switch did not stop cleanly"
echo "1 passed, 0 failed: dpdk metrics, switch lcores $lcores"
