#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench_ssp: round throughput under bsp, ssp:1 and ssp:2 with transient
# stragglers (docs/PROTOCOL.md 6.7). One ina-switch and W ina-host on UDP
# loopback; every round each rank computes for --compute-ms (driving its job
# meanwhile), and in a --straggle share of the rounds one rank, the same on
# every rank and drawn from the seed, computes three times as long. The modes
# take their runs in turn, so the load of the machine falls on all alike.
# Prints, per mode, the median over the runs of the time per round (the
# slowest rank's), rounds per second, the ratio to bsp, and the blocks whose
# sum came back without the rank's own part (rank 0, median). Every run also
# checks that the sums received plus every residual equal the gradients.
# Then the training example (ina-train: softmax regression on the digits, 4
# workers, 30 epochs, the same compute and stragglers) under each mode: the
# median over --train-runs seeds of the final test accuracy and of the
# training time.
# Usage: bench/bench_ssp.sh BUILD_DIR [--runs N] [--rounds R] [--compute-ms MS]
#                           [--straggle P] [--world W] [--port P] [--train-runs N]
set -uo pipefail
build=$1
shift
runs=5 rounds=100 cms=2 straggle=0.1 world=4 port=9293 train_runs=3
while [ $# -gt 0 ]; do
	case $1 in
	--runs) runs=$2 ;;
	--rounds) rounds=$2 ;;
	--compute-ms) cms=$2 ;;
	--straggle) straggle=$2 ;;
	--world) world=$2 ;;
	--port) port=$2 ;;
	--train-runs) train_runs=$2 ;;
	*) echo "usage: bench_ssp.sh BUILD_DIR [--runs N] [--rounds R] [--compute-ms MS]" \
		"[--straggle P] [--world W] [--port P]" >&2; exit 2 ;;
	esac
	shift 2
done
modes=(bsp ssp:1 ssp:2)
tmp=$(mktemp -d /tmp/ina-bench-ssp.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
export INA_JOB_TOKEN=bench-ssp
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) exit; if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

timeout -k 5 $((runs * 3 * (rounds * cms * 4 / 1000 + 60))) "$build/switch_sim/ina-switch" \
	--listen "127.0.0.1:$port" --log-level warn >"$tmp/switch.log" 2>&1 &
sw=$!
pids+=("$sw")
sleep 0.3
job=100
for ((run = 0; run < runs; run++)); do
	for m in "${modes[@]}"; do
		job=$((job + 1))
		hosts=()
		for ((r = 0; r < world; r++)); do
			timeout -k 5 $((rounds * cms * 4 / 1000 + 60)) "$build/host/ina-host" \
				--switch "127.0.0.1:$port" --job $job --rank $r --world "$world" \
				--elements 8192 --density 0.5 --block 256 --lanes 32 \
				--rounds "$rounds" --consistency "$m" --compute-us $((cms * 1000)) \
				--straggle "$straggle" --seed $((run + 1)) --log-level warn \
				>"$tmp/$m-$run-$r.log" 2>&1 </dev/null &
			hosts+=("$!")
		done
		ok=1
		for ((r = 0; r < world; r++)); do
			wait "${hosts[$r]}" || ok=0
		done
		if [ $ok -eq 1 ]; then
			# The slowest rank's time per round; rank 0's missed blocks.
			cat "$tmp/$m-$run-"*.log | awk '/ms\/round/ { print $4 }' | sort -g | tail -1 \
				>>"$tmp/$m.ms"
			awk '/ms\/round/ { print $8 }' "$tmp/$m-$run-0.log" >>"$tmp/$m.missed"
		else
			echo "$m run $run FAILED:" >&2
			tail -n 3 "$tmp/$m-$run-"*.log >&2
		fi
	done
done
kill -TERM "$sw" 2>/dev/null
wait "$sw" 2>/dev/null

echo "bsp against ssp with transient stragglers: $world ranks, $rounds rounds of 8192 floats" \
	"(32 lanes x 256), ${cms} ms of compute per round, a straggler (3x) in $straggle of the" \
	"rounds; medians of $runs runs"
printf "  %-6s %12s %10s %10s %14s\n" mode "ms/round" "rounds/s" "vs bsp" "blocks missed"
base=$(median <"$tmp/bsp.ms" 2>/dev/null)
for m in "${modes[@]}"; do
	ms=$(median <"$tmp/$m.ms" 2>/dev/null)
	missed=$(median <"$tmp/$m.missed" 2>/dev/null)
	if [ -z "$ms" ]; then
		printf "  %-6s %12s\n" "$m" failed
		continue
	fi
	printf "  %-6s %12.3f %10.1f %10s %14s\n" "$m" "$ms" "$(awk -v m="$ms" 'BEGIN { print 1000 / m }')" \
		"$([ -n "$base" ] && awk -v b="$base" -v m="$ms" 'BEGIN { printf "%.2fx", b / m }')" \
		"${missed:-n/a}"
done

train=$build/train/ina-train
[ -x "$train" ] && [ "$train_runs" -gt 0 ] || exit 0
for ((run = 0; run < train_runs; run++)); do
	for m in "${modes[@]}"; do
		if timeout -k 5 300 "$train" --switch "127.0.0.1:$port" --workers 4 --epochs 30 \
			--seed $((run + 1)) --check-every 100000 --consistency "$m" \
			--compute-us $((cms * 1000)) \
			--straggle "$straggle" --quiet --report "$tmp/train-$m-$run.json" \
			>"$tmp/train-$m-$run.log" 2>&1 </dev/null; then
			awk -F'[:,]' '/"accuracy"/ { print $2 }' "$tmp/train-$m-$run.json" >>"$tmp/$m.acc"
			awk -F'[:,]' '/"seconds"/ { print $2 }' "$tmp/train-$m-$run.json" >>"$tmp/$m.sec"
		else
			echo "ina-train $m run $run FAILED:" >&2
			tail -n 3 "$tmp/train-$m-$run.log" >&2
		fi
	done
done
echo
echo "ina-train (softmax regression on the digits, 4 workers, 30 epochs = 360 rounds, the same" \
	"compute and stragglers); medians of $train_runs seeds"
printf "  %-6s %14s %12s\n" mode "test accuracy" "seconds"
for m in "${modes[@]}"; do
	acc=$(median <"$tmp/$m.acc" 2>/dev/null)
	sec=$(median <"$tmp/$m.sec" 2>/dev/null)
	if [ -z "$acc" ]; then
		printf "  %-6s %14s\n" "$m" failed
		continue
	fi
	printf "  %-6s %14.4f %12.2f\n" "$m" "$acc" "$sec"
done
