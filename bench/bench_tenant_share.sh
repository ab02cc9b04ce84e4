#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench_tenant_share: one tenant's goodput beside another on one switch
# (issue 19 point 6). An ina-switch in tenant mode (--tenants, --share fair)
# serves tenant alice's job (W ranks, a dense tensor, R rounds, weight 1) in
# four settings, which take their runs in turn so that the machine's load
# falls on all alike:
#   alone     alice's job by itself;
#   apart     alice's job on its switch while mallory's job and her hostile
#             sender (below) run against a second switch of their own: the
#             same processes on the same two cores as 'hostile', but no
#             switch shared. On a real cluster tenants' hosts do not share
#             cores, so this is "running alone" as the switch sees it, and
#             hostile / apart is what sharing the switch costs alice;
#   benign    beside tenant mallory's own job (one rank, the same tensor, as
#             many rounds as alice's job lasts, weight 255: her quota's most);
#   hostile   beside the same job of mallory's, while mallory also sends
#             alice's job id every packet of tests/tools/hostile (forged
#             tags, junk, replays, a JOIN flood) in a loop: what a tenant
#             with a key can do to another without alice's key.
# Prints per setting the median over the runs of alice's time per round (the
# slowest rank's) and her goodput relative to running alone and to 'apart'
# (issue 19's goal: hostile >= 0.9 of apart); every run must
# verify every one of alice's sums. The hostile sender and mallory's job are
# bounded by timeout and killed when alice's job ends.
# Usage: bench/bench_tenant_share.sh BUILD_DIR [--runs N] [--rounds R]
#                                    [--elements M] [--world W] [--port P]
set -uo pipefail
build=$1
shift
runs=5 rounds=20 elements=1048576 world=2 port=9296
. "$(dirname "$0")/lib_jobs.sh"
jobs_bench_init tshare "bench_tenant_share.sh BUILD_DIR [--runs N] [--rounds R] [--elements M] [--world W] [--port P]" "$@"
for b in switch_sim/ina-switch host/ina-host tests/hostile; do
	[ -x "$build/$b" ] || { echo "bench_tenant_share: no $build/$b (build first)" >&2; exit 2; }
done
unset INA_JOB_TOKEN INA_TENANT INA_TENANT_KEY
key_a=$(head -c 32 /dev/urandom | base64)
key_m=$(head -c 32 /dev/urandom | base64)
cat >"$tmp/tenants.yaml" <<YAML
tenants:
  - {name: alice, index: 1, key: $key_a, jobs: 4, slots: 512, max_weight: 1}
  - {name: mallory, index: 2, key: $key_m, jobs: 4, slots: 512, max_weight: 255}
YAML
chmod 600 "$tmp/tenants.yaml"
alice_job=$(((1 << 24) | 1)) # the wire's job id: alice's index in the top byte

# run SETTING N: prints alice's slowest rank's seconds a round, or nothing.
run() {
	local set=$1 n=$2 r s rc=0 hosts=() side=() sws=() mport=$port
	local -a tenant_mode=(--tenants "$tmp/tenants.yaml" --share fair)
	start_switch "$port" "$tmp/sw.$set.$n.log" "${tenant_mode[@]}"
	if [ "$set" = apart ]; then
		mport=$((port + 1))
		start_switch "$mport" "$tmp/sw.$set.$n.m.log" "${tenant_mode[@]}"
	fi
	if [ "$set" != alone ]; then
		INA_TENANT=2 INA_TENANT_KEY=$key_m timeout 300 "$build/host/ina-host" \
			--switch "127.0.0.1:$mport" --job 1 --rank 0 --world 1 --weight 255 \
			--elements "$elements" --density 1 --rounds 100000 --quiet \
			>"$tmp/m.$set.$n.log" 2>&1 &
		side+=("$!")
	fi
	if [ "$set" = hostile ] || [ "$set" = apart ]; then
		timeout 300 bash -c "while :; do '$build/tests/hostile' 127.0.0.1:$mport $alice_job 200 \
			>/dev/null 2>&1 || exit; done" &
		side+=("$!")
	fi
	pids+=("${side[@]}")
	for ((r = 0; r < world; r++)); do
		INA_TENANT=1 INA_TENANT_KEY=$key_a timeout 300 "$build/host/ina-host" \
			--switch "127.0.0.1:$port" --job 1 --rank $r --world "$world" \
			--elements "$elements" --density 1 --rounds "$rounds" --quiet \
			--report "$tmp/r$r.json" >"$tmp/h$r.log" 2>&1 &
		hosts+=("$!")
	done
	for ((r = 0; r < world; r++)); do
		wait "${hosts[$r]}" || rc=1
	done
	for s in "${side[@]}"; do
		kill "$s" 2>/dev/null
		pkill -P "$s" 2>/dev/null
	done
	kill "${sws[@]}" 2>/dev/null
	wait 2>/dev/null
	pids=()
	[ $rc -eq 0 ] || { echo "$set run $n: alice's job failed: $(tail -n 2 "$tmp/h0.log")" >&2; return; }
	slowest_round || echo "$set run $n: not verified" >&2
}

settings=(alone apart benign hostile)
for s in "${settings[@]}"; do : >"$tmp/$s"; done
for ((n = 0; n < runs; n++)); do
	for s in "${settings[@]}"; do
		echo "bench_tenant_share: run $((n + 1)) of $runs: $s" >&2
		run "$s" "$n" >>"$tmp/$s"
	done
done
alone=$(median <"$tmp/alone")
apart=$(median <"$tmp/apart")
printf "bench_tenant_share: alice's job, %s elements f32 dense, world %s, %s rounds, median of %s runs; load at the end: %s\n" \
	"$elements" "$world" "$rounds" "$runs" "$(cut -d' ' -f1-3 /proc/loadavg)"
for s in "${settings[@]}"; do
	t=$(median <"$tmp/$s")
	printf "  %-8s %8.3f ms a round  goodput / alone %.2f  / apart %.2f  (%s runs ok)\n" "$s" \
		"$(awk -v s="$t" 'BEGIN { print s * 1000 }')" \
		"$(awk -v a="$alone" -v b="$t" 'BEGIN { if (b > 0) print a / b; else print 0 }')" \
		"$(awk -v a="$apart" -v b="$t" 'BEGIN { if (b > 0) print a / b; else print 0 }')" \
		"$(wc -l <"$tmp/$s")"
done
