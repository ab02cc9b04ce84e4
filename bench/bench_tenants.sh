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
while [ $# -gt 0 ]; do
	case $1 in
	--runs) runs=$2 ;;
	--rounds) rounds=$2 ;;
	--elements) elements=$2 ;;
	--world) world=$2 ;;
	--port) port=$2 ;;
	*) echo "usage: bench_tenants.sh BUILD_DIR [--runs N] [--rounds R] [--elements M]" \
		"[--world W] [--port P]" >&2; exit 2 ;;
	esac
	shift 2
done
tmp=$(mktemp -d /tmp/ina-bench-tenants.XXXXXX)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
key=$(head -c 32 /dev/urandom | base64)
cat >"$tmp/tenants.yaml" <<YAML
tenants:
  - {name: bench, index: 1, key: $key, jobs: 4, slots: 4096, max_weight: 255}
YAML
chmod 600 "$tmp/tenants.yaml"

# run MODE N: one job; prints the slowest rank's seconds per round, or
# nothing when a rank failed.
run() {
	local mode=$1 n=$2 sw r worst=0 s rc=0 hosts=()
	local -a swargs=(--listen "127.0.0.1:$port") env=(INA_JOB_TOKEN=bench)
	if [ "$mode" = tenant ]; then
		swargs+=(--tenants "$tmp/tenants.yaml")
		env=(INA_TENANT=1 "INA_TENANT_KEY=$key")
	fi
	timeout 300 "$build/switch_sim/ina-switch" "${swargs[@]}" >"$tmp/sw.$mode.$n.log" 2>&1 &
	sw=$!
	pids+=("$sw")
	for _ in $(seq 100); do
		grep -q serving "$tmp/sw.$mode.$n.log" 2>/dev/null && break
		sleep 0.05
	done
	for ((r = 0; r < world; r++)); do
		env "${env[@]}" timeout 300 "$build/host/ina-host" --switch "127.0.0.1:$port" \
			--job 1 --rank $r --world "$world" --elements "$elements" --density 1 \
			--rounds "$rounds" --quiet --report "$tmp/r$r.json" >"$tmp/h$r.log" 2>&1 &
		hosts+=("$!")
	done
	for ((r = 0; r < world; r++)); do
		wait "${hosts[$r]}" || rc=1
	done
	kill "$sw" 2>/dev/null
	wait "$sw" 2>/dev/null
	[ $rc -eq 0 ] || { echo "$mode run $n failed" >&2; return; }
	for ((r = 0; r < world; r++)); do
		[ "$(jq -r .verified "$tmp/r$r.json")" = true ] || { echo "$mode: not verified" >&2; return; }
		s=$(jq -r ".seconds / $rounds" "$tmp/r$r.json")
		worst=$(awk -v a="$worst" -v b="$s" 'BEGIN { print (b > a) ? b : a }')
	done
	echo "$worst"
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

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
