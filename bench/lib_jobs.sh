# SPDX-License-Identifier: MIT
# What the benches that time whole jobs over UDP loopback share (sourced by
# bench_tenants.sh and bench_tenant_share.sh): their options, their scratch
# folder, starting a switch, reading the ranks' reports, medians.
#
# jobs_bench_init NAME USAGE "$@": parses --runs N --rounds R --elements M
#   --world W --port P into runs, rounds, elements, world, port (the caller
#   sets their defaults first); makes $tmp (/tmp/ina-bench-NAME.*, kept with
#   KEEP=1) and a trap that kills every pid in 'pids' and removes it.
# start_switch PORT LOG [ARG...]: ina-switch --listen 127.0.0.1:PORT ARG...,
#   its log in LOG, bounded by timeout; its pid in 'pids' and 'sws'; returns
#   once it serves (5 s at most).
# slowest_round: the slowest rank's seconds a round, from $tmp/r<rank>.json
#   of ranks 0..world-1; fails, naming it, when one did not verify.
# median: the median of the numbers on standard input ("nan" for none).

jobs_bench_init() {
	local name=$1 usage=$2
	shift 2
	while [ $# -gt 0 ]; do
		[ $# -ge 2 ] || { echo "usage: $usage" >&2; exit 2; }
		case $1 in
		--runs) runs=$2 ;;
		--rounds) rounds=$2 ;;
		--elements) elements=$2 ;;
		--world) world=$2 ;;
		--port) port=$2 ;;
		*) echo "usage: $usage" >&2; exit 2 ;;
		esac
		shift 2
	done
	command -v jq >/dev/null || { echo "$name: needs jq" >&2; exit 2; }
	tmp=$(mktemp -d "/tmp/ina-bench-$name.XXXXXX")
	pids=()
	trap jobs_bench_cleanup EXIT
	trap 'exit 130' INT TERM
}

jobs_bench_cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	[ -n "${KEEP:-}" ] || rm -rf "$tmp"
}

start_switch() {
	local port=$1 log=$2
	shift 2
	timeout 300 "$build/switch_sim/ina-switch" --listen "127.0.0.1:$port" "$@" >"$log" 2>&1 &
	sws+=("$!")
	pids+=("$!")
	for _ in $(seq 100); do
		grep -q serving "$log" 2>/dev/null && break
		sleep 0.05
	done
}

slowest_round() {
	local r s worst=0
	for ((r = 0; r < world; r++)); do
		[ "$(jq -r .verified "$tmp/r$r.json")" = true ] || { echo "rank $r: not verified" >&2; return 1; }
		s=$(jq -r ".seconds / $rounds" "$tmp/r$r.json")
		worst=$(awk -v a="$worst" -v b="$s" 'BEGIN { print (b > a) ? b : a }')
	done
	echo "$worst"
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
