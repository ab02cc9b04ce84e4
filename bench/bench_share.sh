#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench_share: three jobs sharing one switch (ina-switch --share, issue 7
# point 4), simulated with ina-sim (the real pipeline and engines over
# modelled links, in simulated time: the figures do not depend on this
# machine's load) on topologies/three-jobs.yaml: three jobs of 4 hosts asking
# 64 lanes each of a switch of 96 slots, on links where a job's goodput
# follows its lanes. Policies: first-come (the second and third jobs find no
# room and are refused), fair (the first job alone takes all it asks, then
# gives back at a round boundary as the others come), fair with
# --share-total 3, and the latter with weights 1:2:3. Each runs with
# --runs seeds of link loss (--loss); prints, per policy, the median over the
# runs of each job's goodput (Mbit/s; 0 for a job refused), the lanes each
# held at the end (after any give-back),
# the sum, and Jain's fairness index over the three goodputs (over goodput /
# weight for the weighted run): (sum x)^2 / (n sum x^2), 1 when equal, 1/n
# when one job has it all.
# Usage: bench/bench_share.sh BUILD_DIR [--runs N] [--loss P] [--topology FILE]
set -uo pipefail
build=$1
shift
top=$(cd "$(dirname "$0")/.." && pwd)
runs=5 loss=0.0001 topo=$top/topologies/three-jobs.yaml
while [ $# -gt 0 ]; do
	case $1 in
	--runs) runs=$2 ;;
	--loss) loss=$2 ;;
	--topology) topo=$2 ;;
	*) echo "usage: bench_share.sh BUILD_DIR [--runs N] [--loss P] [--topology FILE]" >&2
	   exit 2 ;;
	esac
	shift 2
done
sim=$build/sim/ina-sim
[ -x "$sim" ] || { echo "bench_share: no $sim (build first)" >&2; exit 2; }
command -v jq >/dev/null || { echo "bench_share: needs jq" >&2; exit 2; }
tmp=$(mktemp -d /tmp/ina-bench-share.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) exit; if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# policy name | the switch's share lines | the three jobs' weights
policies=("first-come|share: first-come|1 1 1"
	  "fair|share: fair|1 1 1"
	  "fair,total=3|share: fair\n    share_total: 3|1 1 1"
	  "fair,total=3,w=1:2:3|share: fair\n    share_total: 3|1 2 3")

# The topology with the policy's share lines, the weights and the loss.
variant() {
	local share=$1 weights=$2 out=$3
	read -r w1 w2 w3 <<<"$weights"
	awk -v share="$share" -v loss="$loss" -v w1="$w1" -v w2="$w2" -v w3="$w3" '
		BEGIN { gsub(/\\n/, "\n", share); n = 0 }
		/^  mtu:/ { print; print "  loss: " loss; next }
		/^    share:/ { print "    " share; next }
		/^    weight:/ { n++; print "    weight: " (n == 1 ? w1 : n == 2 ? w2 : w3); next }
		{ print }' "$topo" >"$out"
}

echo "three jobs on one switch: $(basename "$topo"), $runs runs (link loss $loss, seeds 1..$runs), medians"
printf "  %-22s %10s %10s %10s %11s %9s %12s %7s\n" policy "ja Mbit/s" "jb Mbit/s" "jc Mbit/s" \
	"sum Mbit/s" "lanes" "jobs failed" "Jain"
for p in "${policies[@]}"; do
	IFS='|' read -r name share weights <<<"$p"
	variant "$share" "$weights" "$tmp/t.yaml"
	read -r w1 w2 w3 <<<"$weights"
	: >"$tmp/ga" ; : >"$tmp/gb" ; : >"$tmp/gc" ; : >"$tmp/sum" ; : >"$tmp/jain" ; : >"$tmp/fail"
	lanes=""
	for seed in $(seq "$runs"); do
		"$sim" --quiet --seed "$seed" --json "$tmp/r.json" "$tmp/t.yaml" >"$tmp/sim.log" 2>&1
		if [ ! -s "$tmp/r.json" ]; then
			echo "  $name: ina-sim failed:"; tail -3 "$tmp/sim.log"; continue
		fi
		jq -r '[.jobs[] | (if .state == "ok" then .goodput_bps / 1e6 else 0 end)] | @tsv' \
			"$tmp/r.json" >"$tmp/g"
		read -r ga gb gc <"$tmp/g"
		echo "$ga" >>"$tmp/ga"; echo "$gb" >>"$tmp/gb"; echo "$gc" >>"$tmp/gc"
		awk -v a="$ga" -v b="$gb" -v c="$gc" 'BEGIN { print a + b + c }' >>"$tmp/sum"
		awk -v a="$ga" -v b="$gb" -v c="$gc" -v w1="$w1" -v w2="$w2" -v w3="$w3" 'BEGIN {
			x = a / w1; y = b / w2; z = c / w3; s = x + y + z; q = x * x + y * y + z * z
			print (q > 0 ? s * s / (3 * q) : 0) }' >>"$tmp/jain"
		jq '[.jobs[] | select(.state != "ok")] | length' "$tmp/r.json" >>"$tmp/fail"
		# The lanes each job got, from the switch's log of admissions.
		lanes=$(awk '/admitted with/ { for (i = 1; i <= NF; i++) if ($i == "with") g[$5] = $(i + 1) }
			     /admitted, epoch/ { for (i = 1; i <= NF; i++) if ($i == "lanes,") g[$5] = $(i - 1) }
			     /now on .* lanes from round/ { for (i = 1; i <= NF; i++) if ($i == "on") g[$5] = $(i + 1) }
			     END { printf "%s:%s:%s", (g["1:"] ? g["1:"] : 0), (g["2:"] ? g["2:"] : 0), (g["3:"] ? g["3:"] : 0) }' \
				"$tmp/sim.log")
		rm -f "$tmp/r.json"
	done
	printf "  %-22s %10.1f %10.1f %10.1f %11.1f %9s %12s %7.3f\n" "$name" \
		"$(median <"$tmp/ga")" "$(median <"$tmp/gb")" "$(median <"$tmp/gc")" \
		"$(median <"$tmp/sum")" "$lanes" "$(median <"$tmp/fail")" "$(median <"$tmp/jain")"
done
echo "  (Jain over goodput / weight in the weighted run; a refused job counts 0)"
