#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench_subblocks: issue 18's time part. One ina-switch and W ina-host ranks
# allreduce the shipped real gradients (--input, data/grads_cnn_digits_3it.npy)
# for R rounds, over UDP loopback and over DPDK net_memif (one memif link a
# rank, jumbo frames), with four ways of cutting the tensor:
#   fixed      --block 1024, no sub-blocks (the baseline of the ratios)
#   plan       --block 2048 --plan, cuts priced out (--plan-cost
#              P,Y,1000000,0): the block planner, B per round up to what a
#              packet holds, whole blocks
#   fixed+sub  --block 1024 --sub-block b
#   plan+sub   --block 2048 --plan: the planner picks B and its cut b per round (or the
#              ina-host arguments of --plansub ARGS, or INA_BENCH_PLANSUB)
# The planned cuts are priced for their transport (--plan-cost P,Y,C,S): udp
# 364,0.223,1000,9, memif 219,0.116,150,9.
# each under two sparsifications: zero-skipping only (--sparsify off: a block
# or sub-block of zeros is not sent) and top-k by mass 0.5 (--sparsify topk
# --keep-mass 0.5, with residual carry-over). Every run starts a fresh switch;
# the configurations take their runs in turn, so the machine's load falls on
# all alike. Every run must verify every round (ina-host exits 0).
# Prints per transport, sparsification and cut the medians over the runs of:
# time per round (in a run, the median over its R timed rounds of the slowest
# rank's time of the round), packets per round (a rank's packets sent and
# received over the run / its rounds, mean of the ranks; retransmissions, the
# JOIN, the FIN and the one-element barrier before each round included), bytes
# per round (the median over the timed rounds of a rank's bytes sent in the
# round, mean of the ranks; retransmissions included), and each one's ratio
# to fixed B 1024 of the same transport and sparsification.
# Warm-up: a run first does W rounds that are not timed (--warmup W; 2 over
# udp, the first round's retransmissions while the ranks start; 60 over
# memif: its rings of 1024 buffers take about 14 rounds of this tensor to go
# round once, each buffer's pages faulted in by its first frame, and those
# rounds took 2-8 ms against 0.1-0.5 ms after; rounds cut into sub-blocks
# settled later still, 0.9-1.0 ms through round 60 against 0.55-0.7 after,
# where whole blocks' were already steady; 2026-11-29).
# Bounded: every process runs under timeout(1); the scratch directory, the
# memif socket and DPDK's run files are removed at exit.
# Usage: bench/bench_subblocks.sh BUILD_DIR [--runs N] [--rounds R] [--warmup W]
#            [--world W] [--transports "udp memif"] [--sub-b b] [--plansub ARGS] [--port P]
#            [--input FILE.npy]
set -uo pipefail
build=$1
shift
top=$(cd "$(dirname "$0")/.." && pwd)
runs=3 rounds=9 warmup= world=4 transports="udp memif" sub_b=64 port=9297
input=$top/data/grads_cnn_digits_3it.npy
plansub=${INA_BENCH_PLANSUB:-}
usage() {
	echo "usage: bench_subblocks.sh BUILD_DIR [--runs N] [--rounds R] [--warmup W] [--world W]" \
		"[--transports \"udp memif\"] [--sub-b b] [--plansub ARGS] [--port P]" \
		"[--input FILE.npy]" >&2
	exit 2
}
while [ $# -gt 0 ]; do
	[ $# -ge 2 ] || usage
	case $1 in
	--runs) runs=$2 ;;
	--rounds) rounds=$2 ;;
	--warmup) warmup=$2 ;;
	--world) world=$2 ;;
	--transports) transports=$2 ;;
	--sub-b) sub_b=$2 ;;
	--plansub) plansub=$2 ;;
	--port) port=$2 ;;
	--input) input=$2 ;;
	*) usage ;;
	esac
	shift 2
done
command -v jq >/dev/null || { echo "bench_subblocks: needs jq" >&2; exit 2; }
switch=$build/switch_sim/ina-switch host=$build/host/ina-host
if [ ! -x "$switch" ] || [ ! -x "$host" ]; then
	echo "bench_subblocks: build $build first" >&2
	exit 2
fi
[ -r "$input" ] || { echo "bench_subblocks: no $input" >&2; exit 2; }

tmp=$(mktemp -d /tmp/ina-bench-sub.XXXXXX)
memif_sock=/run/ina-bench-sub-$$.sock
pids=()
# shellcheck disable=SC2317  # called from the traps
cleanup() {
	local p
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	sleep 0.2
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$tmp" "$memif_sock" /var/run/dpdk/ina-bsub-*-$$
}
trap cleanup EXIT
trap 'exit 130' INT TERM
export INA_JOB_TOKEN=bench-subblocks
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) exit; if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# The cuts: name and ina-host arguments. The planner's B goes up to what one
# packet holds (--block with --plan is its largest): 2048 f32 elements in the
# 9000-byte packets of both transports here.
cuts=(fixed plan fixed+sub plan+sub)
plan_b=2048
declare -A cut_args=([fixed]="--block 1024" [plan]="--block $plan_b --plan"
	[fixed+sub]="--block 1024 --sub-block $sub_b" [plan+sub]="--block $plan_b --plan")
[ -n "$plansub" ] && cut_args[plan+sub]=$plansub
# The planner's prices (ina-host --plan-cost P,Y,C,S) per transport: a packet,
# a byte (bench/README.md "Time per packet and per byte"), what a cut packet
# and each of its sub-blocks cost more (bench/README.md "What a cut costs");
# 'plan' prices cuts out (1e6 ns: whole blocks), 'plan+sub' at the
# transport's (planner.h's PLANNER_UDP_* and PLANNER_MEMIF_*).
declare -A plan_base=([udp]="364,0.223" [memif]="219,0.116") plan_cut=([udp]="1000,9" [memif]="150,9")
sparsifications=(zero mass0.5)
declare -A sp_args=([zero]="--sparsify off" [mass0.5]="--sparsify topk --keep-mass 0.5")

host_timeout=$((rounds * 2 + 120))
# warmup_of TRANSPORT: the untimed rounds a run starts with
warmup_of() { if [ -n "$warmup" ]; then echo "$warmup"; elif [ "$1" = memif ]; then echo 60; else echo 2; fi; }
eal=(--no-huge -m 256 --no-pci --no-telemetry --log-level=lib.eal:error "--lcores=0@(0-1)")
vopts=",socket=$memif_sock,bsize=9216"

# one_run TRANSPORT SPARSIFICATION CUT JOB: a fresh switch and W ranks;
# appends the run's figures to $tmp/res/KEY.{ms,pkts,bytes}; fails if a rank
# did not verify every round.
one_run() {
	local tr=$1 sp=$2 cut=$3 job=$4 dir=$tmp/run-$4 key=$1-$2-$3 sw r rc ok=1 i
	local swcmd=() hp=() args w total
	w=$(warmup_of "$tr")
	total=$((rounds + w))
	mkdir -p "$dir"
	rm -f "$memif_sock"
	if [ "$tr" = memif ]; then
		swcmd=("$switch" "${eal[@]}" --file-prefix="ina-bsub-sw-$$")
		for ((r = 0; r < world; r++)); do
			swcmd+=(--vdev="net_memif$r,role=server,id=$r$vopts")
		done
		swcmd+=(-- --port "dpdk:port=all,ip=10.77.0.1,udp=$port,mtu=9000")
	else
		swcmd=("$switch" --listen "127.0.0.1:$port")
	fi
	timeout -k 5 $((host_timeout + 30)) "${swcmd[@]}" --log-level info \
		>"$dir/switch.log" 2>&1 </dev/null &
	sw=$!
	pids+=("$sw")
	# ready: the UDP port bound, or the DPDK switch serving (up to 30 s)
	for ((i = 0; i < 300; i++)); do
		kill -0 "$sw" 2>/dev/null || break
		if [ "$tr" = memif ]; then
			grep -q "listening\|serving" "$dir/switch.log" && break
		else
			ss -Hlun "sport = :$port" 2>/dev/null | grep -q . && break
		fi
		sleep 0.1
	done
	# shellcheck disable=SC2206  # the arguments split on purpose
	args=(${cut_args[$cut]} ${sp_args[$sp]})
	case $cut in
	plan) args+=(--plan-cost "${plan_base[$tr]},1000000,0") ;;
	plan+sub) [ -z "$plansub" ] && args+=(--plan-cost "${plan_base[$tr]},${plan_cut[$tr]}") ;;
	esac
	for ((r = 0; r < world; r++)); do
		if [ "$tr" = memif ]; then
			# a zero-copy memif client, as docs/DPDK.md runs a host
			timeout -k 5 $host_timeout "$host" "${eal[@]}" --single-file-segments \
				--file-prefix="ina-bsub-h$r-$$" \
				--vdev="net_memif0,role=client,id=$r$vopts,zero-copy=yes" \
				-- --port "dpdk:port=0,ip=10.77.0.$((r + 2)),udp=$port,mtu=9000,link_wait_ms=5000" \
				--switch "10.77.0.1:$port" --job "$job" --rank $r --world "$world" \
				--input "$input" --rounds "$total" "${args[@]}" --quiet --log-level warn \
				--report "$dir/r$r.json" >"$dir/h$r.log" 2>&1 </dev/null &
		else
			timeout -k 5 $host_timeout "$host" --switch "127.0.0.1:$port" --job "$job" \
				--rank $r --world "$world" --input "$input" --rounds "$total" \
				"${args[@]}" --quiet --log-level warn --report "$dir/r$r.json" \
				>"$dir/h$r.log" 2>&1 </dev/null &
		fi
		hp+=("$!")
		pids+=("$!")
	done
	for ((r = 0; r < world; r++)); do
		rc=0
		wait "${hp[$r]}" || rc=$?
		if [ $rc -ne 0 ] || [ "$(jq -r .verified "$dir/r$r.json" 2>/dev/null)" != true ]; then
			ok=0
			echo "$key run (job $job): rank $r exited $rc:" >&2
			tail -n 3 "$dir/h$r.log" >&2
		fi
	done
	kill -TERM "$sw" 2>/dev/null
	wait "$sw" 2>/dev/null
	pids=()
	rm -rf "$memif_sock" /var/run/dpdk/ina-bsub-*-$$
	if [ $ok -ne 1 ]; then
		echo "$key run (job $job): ina-switch said:" >&2
		tail -n 3 "$dir/switch.log" >&2
		return 1
	fi
	jq -s --argjson w "$w" --argjson n "$total" '
		def med: sort | if length % 2 == 1 then .[length / 2 | floor]
			else (.[length / 2 - 1] + .[length / 2]) / 2 end;
		. as $r |
		([range($w; $n) as $i | $r | map(.per_round[$i].seconds) | max] | med * 1000),
		(map(.packets_sent + .packets_received) | add / length / $n),
		([range($w; $n) as $i | $r | map(.per_round[$i].bytes_sent) | add / length] | med)' \
		"$dir"/r*.json |
		{ read -r ms; read -r pk; read -r by
		  echo "$ms" >>"$tmp/res/$key.ms"; echo "$pk" >>"$tmp/res/$key.pkts"
		  echo "$by" >>"$tmp/res/$key.bytes"; }
	rm -rf "$dir"
}

mkdir -p "$tmp/res"
job=300
for ((run = 1; run <= runs; run++)); do
	for tr in $transports; do
		for sp in "${sparsifications[@]}"; do
			for cut in "${cuts[@]}"; do
				[ -n "${cut_args[$cut]:-}" ] || continue
				job=$((job + 1))
				echo "bench_subblocks: run $run of $runs: $tr $sp $cut" >&2
				: >>"$tmp/res/$tr-$sp-$cut.ms"
				one_run "$tr" "$sp" "$cut" $job
			done
		done
	done
done

res() { [ -f "$tmp/res/$1" ] && median <"$tmp/res/$1"; }
ratio() { [ -n "$1" ] && [ -n "$2" ] && awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b }'; }
echo "sub-blocks against fixed B 1024 ($(basename "$input"), $world ranks, $rounds timed rounds a run" \
	"after $(warmup_of udp) (udp) or $(warmup_of memif) (memif) untimed," \
	"medians of $runs runs; b = $sub_b; load at start: $(cut -d' ' -f1-3 /proc/loadavg))"
for cut in "${cuts[@]}"; do
	printf "  %-10s ina-host %s\n" "$cut" "${cut_args[$cut]:-(pending: not in this build)}"
done
for tr in $transports; do
	printf "  %-10s plan --plan-cost %s,1000000,0 (cuts priced out), plan+sub --plan-cost %s,%s\n" \
		"$tr" "${plan_base[$tr]}" "${plan_base[$tr]}" "${plan_cut[$tr]}"
done
for sp in "${sparsifications[@]}"; do
	printf "  %-10s ina-host %s\n" "$sp" "${sp_args[$sp]}"
done
printf "  %-9s %-8s %-10s %10s %10s %12s %8s %8s %8s\n" transport sparsify cut "ms/round" \
	"pkts/round" "bytes/round" "t/fixed" "p/fixed" "b/fixed"
for tr in $transports; do
	for sp in "${sparsifications[@]}"; do
		b_ms=$(res "$tr-$sp-fixed.ms") b_pk=$(res "$tr-$sp-fixed.pkts")
		b_by=$(res "$tr-$sp-fixed.bytes")
		for cut in "${cuts[@]}"; do
			if [ -z "${cut_args[$cut]:-}" ]; then
				printf "  %-9s %-8s %-10s %s\n" "$tr" "$sp" "$cut" "pending (not in this build)"
				continue
			fi
			ms=$(res "$tr-$sp-$cut.ms") pk=$(res "$tr-$sp-$cut.pkts") by=$(res "$tr-$sp-$cut.bytes")
			if [ -z "$ms" ]; then
				printf "  %-9s %-8s %-10s %10s\n" "$tr" "$sp" "$cut" "failed"
				continue
			fi
			printf "  %-9s %-8s %-10s %10.2f %10.0f %12.0f %8s %8s %8s\n" "$tr" "$sp" "$cut" \
				"$ms" "$pk" "$by" "$(ratio "$ms" "$b_ms")" "$(ratio "$pk" "$b_pk")" \
				"$(ratio "$by" "$b_by")"
		done
	done
done
# Issue 18's goals: the planner with sub-blocks against fixed B 1024.
met() { awk -v r="$1" -v g="$2" 'BEGIN { print (r <= g) ? "met" : "not met" }'; }
echo "issue 18's goals, plan+sub / fixed (time <= 1.0, packets <= 1.2):"
for tr in $transports; do
	for sp in "${sparsifications[@]}"; do
		t=$(ratio "$(res "$tr-$sp-plan+sub.ms")" "$(res "$tr-$sp-fixed.ms")")
		p=$(ratio "$(res "$tr-$sp-plan+sub.pkts")" "$(res "$tr-$sp-fixed.pkts")")
		if [ -z "$t" ] || [ -z "$p" ]; then
			printf "  %-9s %-8s %s\n" "$tr" "$sp" "no figures (pending or failed)"
		else
			printf "  %-9s %-8s time %s (%s), packets %s (%s)\n" "$tr" "$sp" "$t" \
				"$(met "$t" 1.0)" "$p" "$(met "$p" 1.2)"
		fi
	done
done
