#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench_tenants: the cost of tenant mode end to end (issue 19 point 7): the
# same job, one ina-switch and W ina-host on UDP loopback, in token mode and
# in tenant mode (ina-switch --tenants: every packet tagged and checked,
# docs/PROTOCOL.md 5.13), the modes taking their runs in turn so that the
# machine's load falls on both alike. Prints per mode the median over the
# runs of the time per round (the slowest rank's: its seconds over rounds)
# and the ratio tenant / token. Every run verifies every sum.
# Usage: bench/bench_tenants.sh BUILD_DIR [--runs N] [--rounds R] [--elements M]
#                               [--world W] [--port P]
set -uo pipefail
build=$1
shift
runs=5 rounds=20 elements=4194304 world=2 port=9294
. "$(dirname "$0")/lib_jobs.sh"
jobs_bench_init tenants "bench_tenants.sh BUILD_DIR [--runs N] [--rounds R] [--elements M] [--world W] [--port P]" "$@"
key=$(head -c 32 /dev/urandom | base64)
cat >"$tmp/tenants.yaml" <<YAML
tenants:
  - {name: bench, index: 1, key: $key, jobs: 4, slots: 4096, max_weight: 255}
YAML
chmod 600 "$tmp/tenants.yaml"

# run MODE N: one job; prints the slowest rank's seconds per round, or
# nothing when a rank failed.
run() {
	local mode=$1 n=$2 r rc=0 hosts=() sws=()
	local -a swargs=() env=(INA_JOB_TOKEN=bench)
	if [ "$mode" = tenant ]; then
		swargs+=(--tenants "$tmp/tenants.yaml")
		env=(INA_TENANT=1 "INA_TENANT_KEY=$key")
	fi
	start_switch "$port" "$tmp/sw.$mode.$n.log" "${swargs[@]}"
	for ((r = 0; r < world; r++)); do
		env "${env[@]}" timeout 300 "$build/host/ina-host" --switch "127.0.0.1:$port" \
			--job 1 --rank $r --world "$world" --elements "$elements" --density 1 \
			--rounds "$rounds" --quiet --report "$tmp/r$r.json" >"$tmp/h$r.log" 2>&1 &
		hosts+=("$!")
	done
	for ((r = 0; r < world; r++)); do
		wait "${hosts[$r]}" || rc=1
	done
	kill "${sws[@]}" 2>/dev/null
	wait "${sws[@]}" 2>/dev/null
	pids=()
	[ $rc -eq 0 ] || { echo "$mode run $n failed" >&2; return; }
	slowest_round || echo "$mode run $n: not verified" >&2
}

: >"$tmp/token" >"$tmp/tenant"
for ((n = 0; n < runs; n++)); do
	run token "$n" >>"$tmp/token"
	run tenant "$n" >>"$tmp/tenant"
done
tok=$(median <"$tmp/token")
ten=$(median <"$tmp/tenant")
printf "bench_tenants: %s elements f32 dense, world %s, %s rounds, median of %s runs\n" \
	"$elements" "$world" "$rounds" "$runs"
printf "  token mode   %8.3f ms a round (%s runs ok)\n" "$(awk -v s="$tok" 'BEGIN { print s * 1000 }')" "$(wc -l <"$tmp/token")"
printf "  tenant mode  %8.3f ms a round (%s runs ok)\n" "$(awk -v s="$ten" 'BEGIN { print s * 1000 }')" "$(wc -l <"$tmp/tenant")"
printf "  time per round, tenant / token: %.2f\n" "$(awk -v a="$ten" -v b="$tok" 'BEGIN { print a / b }')"
