#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration test of ina-switch --metrics: a switch on UDP loopback serving
# Prometheus text on 127.0.0.1:<a free TCP port>, a job of 2 ina-host ranks,
# and curl as the scraper. Checks: bad --metrics addresses (unparseable, a
# port in use) fail at start-up with a message and a non-zero status; GET
# /metrics is 200 with the format's content type, every line parses as
# format 0.0.4 says, and the Prometheus project's parser reads it
# (prom_parse.py); with rank 0 alone the job's gauges say so (joined 1 of 2,
# running, round 0); after the job the counters match it (packets at least
# those the ranks sent, 2 JOINs and FINs at least, 1 job admitted and freed,
# results) and equal the SIGUSR1 dump's; /other is 404, POST 405; 20 scrapes
# at once all answer; the switch exits 0 on SIGTERM.
# Usage: udp_metrics.sh BUILD_DIR UDP_PORT
set -euo pipefail
build=$1 port=$2
sw_bin=$build/switch_sim/ina-switch
. "$(dirname "$0")/lib.sh"
lib_init
fail() { echo "FAIL: $*"; [ -f "$tmp/switch.log" ] && { echo "--- switch log"; cat "$tmp/switch.log"; }; exit 1; }
command -v curl >/dev/null || { echo "curl is missing (scripts/deps installs it)"; exit 1; }

. "$(dirname "$0")/metrics_lib.sh"
mport=$(free_tcp_port) || fail "no free TCP port in 19100-19599"
url=http://127.0.0.1:$mport

# Bad addresses: a clear line naming --metrics, status != 0, nothing served.
bad() {
    local want=$1; shift
    local rc=0
    timeout 10 "$sw_bin" --listen "127.0.0.1:$port" "$@" >"$tmp/bad.log" 2>&1 || rc=$?
    [ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "ina-switch $* exited $rc, want a start-up error"
    grep -q -- "--metrics .*$want" "$tmp/bad.log" || { cat "$tmp/bad.log"; fail "ina-switch $*: no '$want'"; }
    echo "bad address: ina-switch $* -> $rc: $(head -1 "$tmp/bad.log")"
}
bad "want ADDR:PORT" --metrics nonsense
bad "not a number" --metrics 127.0.0.1:99999
bad "not a number" --metrics 127.0.0.1:
bad "with an address" --metrics :9101
bad "cannot resolve" --metrics no-such-host.invalid:9101
bad "cannot listen" --metrics 192.0.2.1:9101

export INA_JOB_TOKEN="metrics-$port"
# Serving: its metrics listener opened before (switch_sim/main.c).
start_switch "$tmp/switch.log" --listen "127.0.0.1:$port" --metrics "127.0.0.1:$mport" \
    --log-level info

# The same port again: in use.
bad "Address already in use" --metrics "127.0.0.1:$mport"

m=$tmp/m0.txt
scrape "$m"
check_format "$m" || fail "the text of /metrics does not parse"
[ "$(metric ina_switch_jobs)" = 0 ] || fail "jobs before any: $(metric ina_switch_jobs)"
[ "$(metric ina_switch_packets_received_total)" = 0 ] || fail "packets before any job"
[ "$(metric 'ina_switch_info{transport="udp",role="switch"}')" = 1 ] || fail "ina_switch_info"

# Other paths and methods.
code=$(curl -s -o /dev/null -w '%{http_code}' "$url/other")
[ "$code" = 404 ] || fail "GET /other: $code, want 404"
code=$(curl -s -o /dev/null -w '%{http_code}' "$url/")
[ "$code" = 404 ] || fail "GET /: $code, want 404"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -d x=1 "$url/metrics")
[ "$code" = 405 ] || fail "POST /metrics: $code, want 405"
echo "/other 404, / 404, POST 405"

# Rank 0 alone: the job waits for rank 1, its gauges say so.
host() {
    timeout 60 "$build/host/ina-host" --switch "127.0.0.1:$port" --job 42 --rank "$1" --world 2 \
        --elements 50000 --density 0.5 --block 256 --lanes 8 --rounds 4 \
        --report "$tmp/r$1.json" --quiet --log-level warn >"$tmp/h$1.log" 2>&1
}
host 0 &
h0=$!
pids+=("$h0")
m=$tmp/m1.txt
for ((i = 0; i < 50; i++)); do
    scrape "$m"
    [ "$(metric 'ina_switch_job_round{job="42"}')" = 0 ] && break
    sleep 0.1
done
check_format "$m" || fail "the text with a job does not parse"
check_parser "$m"
for kv in 'ina_switch_jobs 1' 'ina_switch_job_world{job="42"} 2' \
    'ina_switch_job_ranks_joined{job="42"} 1' 'ina_switch_job_ranks_finished{job="42"} 0' \
    'ina_switch_job_state{job="42",state="running"} 1' 'ina_switch_job_lanes{job="42"} 8' \
    'ina_switch_job_round{job="42"} 0' 'ina_switch_job_info{job="42",encoding="f32",sync="bsp"} 1' \
    'ina_switch_slots_free 1016'; do
    v=$(metric "${kv% *}")
    [ "$v" = "${kv##* }" ] || fail "rank 0 alone: ${kv% *} is $v, want ${kv##* }"
done
echo "rank 0 alone: job 42 joined 1 of 2, running, round 0, 8 slots held"

host 1 || { cat "$tmp/h1.log"; fail "rank 1 failed"; }
wait "$h0" || { cat "$tmp/h0.log"; fail "rank 0 failed"; }
for r in 0 1; do
    [ "$(jq -r .verified "$tmp/r$r.json")" = true ] || fail "rank $r did not verify"
done

# After the job: the counters match it.
m=$tmp/m2.txt
for ((i = 0; i < 50; i++)); do
    scrape "$m"
    [ "$(metric ina_switch_jobs)" = 0 ] && break
    sleep 0.1
done
check_format "$m" || fail "the text after the job does not parse"
sent=$(jq -s '[.[].packets_sent] | add' "$tmp"/r*.json)
got=$(jq -s '[.[].packets_received] | add' "$tmp"/r*.json)
rx=$(metric ina_switch_packets_received_total)
ptx=$(metric ina_switch_port_sent_packets_total)
results=$(metric ina_switch_results_total)
echo "ranks sent $sent packets and received $got; switch: received $rx, port sent $ptx, results $results"
# Every rank joined and finished (a JOIN or FIN resent under load counts too);
# the switch received what the ranks sent, and their JOINs and FINs.
joins=$(metric ina_switch_joins_total) fins=$(metric ina_switch_fins_total)
[ "$joins" -ge 2 ] && [ "$fins" -ge 2 ] || fail "JOINs $joins, FINs $fins: want 2 of each at least"
[ "$rx" -gt 0 ] && [ "$rx" -ge "$sent" ] && [ "$rx" -le $((sent + joins + fins)) ] ||
    fail "packets received $rx, the ranks sent $sent (+ $joins JOINs, $fins FINs)"
[ "$ptx" -ge "$got" ] || fail "port sent $ptx, the ranks received $got"
[ "$results" -gt 0 ] || fail "no result"
for kv in 'ina_switch_jobs 0' 'ina_switch_jobs_admitted_total 1' 'ina_switch_jobs_freed_total 1' \
    'ina_switch_jobs_refused_total 0' \
    'ina_switch_slots_free 1024' 'ina_switch_drops_total{reason="wrong_token"} 0'; do
    v=$(metric "${kv% *}")
    [ "$v" = "${kv##* }" ] || fail "after the job: ${kv% *} is $v, want ${kv##* }"
done
grep -q '{job=' "$m" && fail "a job's gauges after it was freed"

# The same counters as the SIGUSR1 dump (the switch is idle now).
kill -USR1 "$sw"
sleep 0.3
m=$tmp/m3.txt
scrape "$m"
dump=$(awk '/ina-switch stats/ { n++ } n == 1' "$tmp/switch.log")
declare -A names=([rx_pkts]=ina_switch_packets_received_total [tx_pkts]=ina_switch_packets_sent_total
    [results]=ina_switch_results_total [results_empty]=ina_switch_results_empty_total
    [result_bytes]=ina_switch_result_bytes_total [duplicates]=ina_switch_duplicates_total
    [waits]=ina_switch_waits_sent_total [shadow_replies]=ina_switch_shadow_replies_total
    [joins]=ina_switch_joins_total [fins]=ina_switch_fins_total
    [jobs_admitted]=ina_switch_jobs_admitted_total [jobs_freed]=ina_switch_jobs_freed_total
    [port_rx_pkts]=ina_switch_port_received_packets_total
    [port_tx_pkts]=ina_switch_port_sent_packets_total)
compared=0
for k in "${!names[@]}"; do
    d=$(echo "$dump" | awk -v k="$k" '$1 == k { v = $2 } END { print v + 0 }')
    v=$(metric "${names[$k]}")
    [ "$d" = "$v" ] || fail "SIGUSR1 says $k $d, /metrics says ${names[$k]} $v"
    compared=$((compared + 1))
done
# Every drop the dump names, by reason.
while read -r k d; do
    v=$(metric "ina_switch_drops_total{reason=\"${k#drop_}\"}")
    [ "$d" = "$v" ] || fail "SIGUSR1 says $k $d, /metrics says $v"
    compared=$((compared + 1))
done < <(echo "$dump" | awk '$1 ~ /^drop_/ { print $1, $2 }')
echo "SIGUSR1 and /metrics agree on $compared counters"

# 20 scrapes at once: every one answered, whole.
cpids=()
for ((i = 0; i < 20; i++)); do
    curl -s -m 10 -o "$tmp/c$i.txt" -w '%{http_code}\n' "$url/metrics" >"$tmp/c$i.code" &
    cpids+=("$!")
done
for p in "${cpids[@]}"; do wait "$p" || fail "a concurrent scrape failed"; done
for ((i = 0; i < 20; i++)); do
    [ "$(cat "$tmp/c$i.code")" = 200 ] || fail "concurrent scrape $i: $(cat "$tmp/c$i.code")"
    check_format "$tmp/c$i.txt" || fail "concurrent scrape $i does not parse"
done
echo "20 concurrent scrapes: all 200, all parse"
check_parser "$m"

kill -TERM "$sw"
rc=0
wait "$sw" || rc=$?
pids=()
[ $rc -eq 0 ] || fail "the switch exited $rc on SIGTERM"
echo "1 passed, 0 failed: metrics on 127.0.0.1:$mport"
