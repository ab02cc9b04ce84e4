#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration test: the host aggregator over UDP loopback (docs/PROTOCOL.md
# 5.12). A switch of 8 slots names a host aggregator (ina-switch --host-mode)
# on the next port. Job 1's rank 0 joins the switch with 8 lanes and holds
# every slot while its rank 1 is not there yet. Job 2 (two ranks, 8 lanes)
# then finds no room: each rank is sent to the aggregator (REDIRECT), says so,
# and runs its rounds there with every sum verified bit for bit; its report
# names the aggregator. Job 1's rank 1 comes, and job 1 runs on the switch,
# verified, its report naming no aggregator. The switch counts 2 JOINs
# redirected and admitted 1 job, the aggregator admitted job 2.
# Bounded: every process under a timeout; both switches killed at the end.
# With MODE 'tenants', both switches take the same tenants file and the jobs
# are tenant carol's: the REDIRECT is tagged, and the aggregator checks and
# tags like any switch; neither may drop one of the jobs' packets on its tag.
# Usage: udp_host_aggregator.sh BUILD_DIR UDP_PORT [MODE] (uses UDP_PORT and UDP_PORT + 1)
set -euo pipefail
build=$1 port=$2 mode=${3:-token}
agg_port=$((port + 1))
. "$(dirname "$0")/lib.sh"
lib_init
tenant_opts=() job="job"
if [ "$mode" = tenants ]; then
    tenant_mode 64
else
    export INA_JOB_TOKEN="test-host-aggregator-$port"
fi
fail=0
start_switch "$tmp/agg.log" --listen "127.0.0.1:$agg_port" --host-mode --slots 64 "${tenant_opts[@]}"
agg=$sw
start_switch "$tmp/switch.log" --listen "127.0.0.1:$port" --slots 8 --peer-timeout-ms 0 \
    --host-aggregator "127.0.0.1:$agg_port" "${tenant_opts[@]}"
host() {	# JOB RANK: one ina-host of a job of two ranks, 8 lanes, 5 rounds
    timeout 60 "$build/host/ina-host" --switch "127.0.0.1:$port" --job "$1" --rank "$2" \
        --world 2 --lanes 8 --block 256 --elements 65536 --density 0.5 --rounds 5 \
        --seed "$1" --timeout-ms 30000 --quiet --report "$tmp/j$1-r$2.json" \
        >"$tmp/j$1-r$2.log" 2>&1
}
host 1 0 &
j1r0=$!
pids+=("$j1r0")
j1="job 1"
[ "$mode" = tenants ] && j1="job 1 of tenant carol"
for _ in $(seq 100); do
    grep -q "$j1: admitted" "$tmp/switch.log" && break
    sleep 0.05
done
grep -q "$j1: admitted" "$tmp/switch.log" || { echo "job 1 not admitted"; cat "$tmp/switch.log"; exit 1; }

# Job 2 finds no slot: both ranks go to the aggregator and run there.
host 2 0 &
a=$!
host 2 1 &
b=$!
for p in "$a" "$b"; do
    wait "$p" || { echo "job 2 failed"; cat "$tmp"/j2-r*.log; fail=1; }
done
for r in 0 1; do
    grep -q "has no slots for the job: it is aggregated by the host aggregator at 127.0.0.1:$agg_port" \
        "$tmp/j2-r$r.log" || { echo "job 2 rank $r does not say where it ran:"; cat "$tmp/j2-r$r.log"; fail=1; }
    [ "$(jq -r .verified "$tmp/j2-r$r.json")" = true ] || { echo "job 2 rank $r: not verified"; fail=1; }
    [ "$(jq -r .aggregator "$tmp/j2-r$r.json")" = "127.0.0.1:$agg_port" ] ||
        { echo "job 2 rank $r: report's aggregator is not 127.0.0.1:$agg_port"; fail=1; }
done

# Job 1's second rank: job 1 runs on the switch.
host 1 1 || { echo "job 1 rank 1 failed"; cat "$tmp/j1-r1.log"; fail=1; }
wait "$j1r0" || { echo "job 1 rank 0 failed"; cat "$tmp/j1-r0.log"; fail=1; }
for r in 0 1; do
    [ "$(jq -r .verified "$tmp/j1-r$r.json")" = true ] || { echo "job 1 rank $r: not verified"; fail=1; }
    [ "$(jq -r .aggregator "$tmp/j1-r$r.json")" = "" ] || { echo "job 1 rank $r: not on the switch"; fail=1; }
done

kill -USR1 "$sw" "$agg"
sleep 0.3
count() { awk -v k="$1" '$1 == k { v = $2 } END { print v + 0 }' "$2"; }
redirected=$(count jobs_redirected "$tmp/switch.log")
admitted=$(count jobs_admitted "$tmp/switch.log")
agg_admitted=$(count jobs_admitted "$tmp/agg.log")
echo "switch: jobs_redirected $redirected, jobs_admitted $admitted; aggregator: jobs_admitted $agg_admitted"
[ "$redirected" -ge 2 ] || { echo "the switch redirected $redirected JOINs, not 2"; fail=1; }
[ "$admitted" = 1 ] || { echo "the switch admitted $admitted jobs, not 1"; fail=1; }
[ "$agg_admitted" = 1 ] || { echo "the aggregator admitted $agg_admitted jobs, not 1"; fail=1; }
grep -q "sent to the host aggregator" "$tmp/switch.log" || { echo "the switch does not log the redirect"; fail=1; }
if [ "$mode" = tenants ]; then
    for f in switch agg; do
        grep -q 'tenant mode' "$tmp/$f.log" || { echo "$f: not in tenant mode"; fail=1; }
        ! grep -q 'drop_auth_fail' "$tmp/$f.log" || { echo "$f dropped the jobs' own packets on their tags"; fail=1; }
    done
fi
[ $fail = 0 ] && echo "udp_host_aggregator: ok ($mode mode)"
exit $fail
