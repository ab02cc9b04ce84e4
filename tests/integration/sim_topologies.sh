#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration test of ina-sim on the shipped topologies: rack4, rack4-lossy
# and rack4-grads (real gradients) run with every sum checked (exit 0, state
# ok, hosts x rounds sums, loss seen and repaired on the lossy one); the same file and seed give
# the same JSON report (wall times aside), another seed other losses and the
# same verdict; two-racks runs in tiers (racks under a spine) with every sum
# checked, each rack's uplink carrying a quarter of its four host links'
# bytes each way, and its ring allreduce time; a small generated fabric in
# three tiers exact in f32, i32 and i32 with loss on every link; three jobs
# on a switch too small for all three, first-come, fair with give-back and
# fair with share_total; two tenants, one attacking the other; a file that
# does not load is exit status 2. CASE fabric instead: fabric-1024 (1,024 workers in three
# tiers, about 30 s and 2.5 GB here): every sum checked, the load by tier
# (each uplink a sixteenth, then an eighth, of its tier below), the ring.
# Usage: sim_topologies.sh BUILD_DIR SOURCE_DIR [small|fabric]
set -euo pipefail
build=$1 src=$2 case=${3:-small}
sim=$build/sim/ina-sim
. "$(dirname "$0")/lib.sh"
lib_init
fail() { echo "sim_topologies: $*" >&2; exit 1; }
run() {	# FILE OUT [args]: ina-sim's JSON, minus the wall times
	local f=$1 out=$2
	shift 2
	timeout 240 "$sim" --quiet --json "$tmp/raw.json" "$@" "$src/topologies/$f.yaml" \
		2>"$tmp/err" || fail "$f: exit $? ($(tail -1 "$tmp/err"))"
	jq -S 'del(.wall)' "$tmp/raw.json" >"$out"
}
q() { jq -r "$1" "$2"; }

if [ "$case" = fabric ]; then
	f=fabric-1024
	run $f "$tmp/$f.json"
	[ "$(q '.jobs[0].state' "$tmp/$f.json")" = ok ] || fail "$f: not ok"
	[ "$(q '.jobs[0].sums_checked' "$tmp/$f.json")" = 2048 ] || fail "$f: not 2048 sums checked"
	[ "$(q '.jobs[0].switches' "$tmp/$f.json")" = 73 ] || fail "$f: not 73 switches"
	[ "$(q '.jobs[0].tiers' "$tmp/$f.json")" = 3 ] || fail "$f: not 3 tiers"
	[ "$(q '.jobs[0].ring.steps' "$tmp/$f.json")" = 2046 ] || fail "$f: ring steps"
	[ "$(q '.jobs[0].ring.time_ns > .jobs[0].mean_round_ns' "$tmp/$f.json")" = true ] ||
		fail "$f: the ring not slower than in-network"
	# Bytes by tier: 1,024 host links, 64 rack uplinks, 8 spine uplinks.
	# Down, every link carries the one result (the sum of 1,024 hosts at
	# density 0.1 is dense): alike. Up, a partial sum of 16 (then 128)
	# hosts is denser than one host's data, but an uplink carries less than
	# the links below it together.
	per() { q ".link_tiers[] | select(.tier == \"$1\") | .$2 / .links" "$tmp/$f.json"; }
	h=$(per host-rack down_bytes) r=$(per rack-spine down_bytes) s=$(per spine-core down_bytes)
	awk -v h="$h" -v r="$r" -v s="$s" 'BEGIN { exit !(r > 0.95 * h && r < 1.05 * h &&
		s > 0.95 * r && s < 1.05 * r) }' ||
		fail "$f: down bytes per link: hosts $h, racks $r, spines $s (not alike)"
	h=$(per host-rack up_bytes) r=$(per rack-spine up_bytes) s=$(per spine-core up_bytes)
	awk -v h="$h" -v r="$r" -v s="$s" 'BEGIN { exit !(h < r && r < 16 * h && r < s &&
		s < 8 * r) }' || fail "$f: up bytes per link: hosts $h, racks $r, spines $s"
	echo "sim_topologies fabric: ok ($(q '.wall.run_s' "$tmp/raw.json") s to run)"
	exit 0
fi

for f in rack4 rack4-lossy; do
	run $f "$tmp/$f.json"
	[ "$(q '.jobs[0].state' "$tmp/$f.json")" = ok ] || fail "$f: not ok"
	[ "$(q '.jobs[0].sums_checked' "$tmp/$f.json")" = 40 ] || fail "$f: not 40 sums checked"
	[ "$(q '.jobs[0].rounds_done' "$tmp/$f.json")" = 10 ] || fail "$f: not 10 rounds"
	[ "$(q '.jobs[0].ring.time_ns > 0' "$tmp/$f.json")" = true ] || fail "$f: no ring time"
	[ "$(q '.links | length' "$tmp/$f.json")" = 4 ] || fail "$f: not 4 links"
done
run rack4-grads "$tmp/grads.json"
[ "$(q '.jobs[0].state' "$tmp/grads.json")" = ok ] || fail "rack4-grads: not ok"
[ "$(q '.jobs[0].sums_checked' "$tmp/grads.json")" = 12 ] || fail "rack4-grads: not 12 sums checked"
lost=$(q '[.links[].directions[].lost] | add' "$tmp/rack4-lossy.json")
[ "$lost" -gt 0 ] || fail "rack4-lossy: nothing lost"
[ "$(q '.jobs[0].retransmits > 0' "$tmp/rack4-lossy.json")" = true ] || fail "no retransmits"
[ "$(q '[.links[].directions[].lost] | add' "$tmp/rack4.json")" = 0 ] || fail "rack4 lost"

# Deterministic: the same seed, the same report; another, other losses.
run rack4-lossy "$tmp/again.json"
cmp -s "$tmp/rack4-lossy.json" "$tmp/again.json" || fail "same seed, different reports"
run rack4-lossy "$tmp/seed2.json" --seed 2
[ "$(q '.jobs[0].state' "$tmp/seed2.json")" = ok ] || fail "seed 2: not ok"
[ "$(q '[.links[].directions[].lost]' "$tmp/seed2.json")" != \
  "$(q '[.links[].directions[].lost]' "$tmp/rack4-lossy.json")" ] || fail "seed 2: same losses"

# Two racks under a spine: exact, each uplink a quarter of its host links.
f=two-racks
run $f "$tmp/$f.json"
[ "$(q '.jobs[0].state' "$tmp/$f.json")" = ok ] || fail "$f: not ok"
[ "$(q '.jobs[0].sums_checked' "$tmp/$f.json")" = 40 ] || fail "$f: not 40 sums checked"
[ "$(q '.jobs[0].switch' "$tmp/$f.json")" = spine0 ] || fail "$f: not aggregated at spine0"
[ "$(q '.jobs[0].ring.time_ns > 0' "$tmp/$f.json")" = true ] || fail "$f: no ring time"
for r in rack0 rack1; do
	for d in 0 1; do
		ratio=$(jq --arg r $r --argjson d $d '
			([.links[] | select(.a == $r and .b == "spine0") | .directions[$d].bytes] | add) /
			([.links[] | select(.b == $r) | .directions[$d].bytes] | add)' "$tmp/$f.json")
		awk -v x="$ratio" 'BEGIN { exit !(x > 0.24 && x < 0.26) }' ||
			fail "$f: $r's uplink carries $ratio of its host links' bytes (direction $d)"
	done
done

# Three tiers on a small fabric (topologies/gen-fabric: 4 racks of 3, 2
# spines, a core): exact as generated (f32, density 0.1), in i32 dense, and
# in i32 with 1% loss on every link, the uplinks included.
"$src/topologies/gen-fabric" 4 3 2 2 >"$tmp/f12.yaml"
sed -e 's/^    rounds: 2/    rounds: 2\n    encoding: i32/' -e 's/density: 0.1/density: 1.0/' \
	"$tmp/f12.yaml" >"$tmp/f12-i32.yaml"
sed -e 's/^    rounds: 2/    rounds: 2\n    encoding: i32/' -e 's/density: 0.1/density: 0.3/' \
	-e 's/^  latency: 1us/  latency: 1us\n  loss: 0.01/' "$tmp/f12.yaml" >"$tmp/f12-lossy.yaml"
for f in f12 f12-i32 f12-lossy; do
	timeout 120 "$sim" --quiet --json "$tmp/$f.json" "$tmp/$f.yaml" 2>"$tmp/err" ||
		fail "$f: exit $? ($(tail -1 "$tmp/err"))"
	[ "$(q '.jobs[0].state' "$tmp/$f.json")" = ok ] || fail "$f: not ok"
	[ "$(q '.jobs[0].sums_checked' "$tmp/$f.json")" = 24 ] || fail "$f: not 24 sums checked"
	[ "$(q '.jobs[0].switches' "$tmp/$f.json")" = 7 ] || fail "$f: not 7 switches"
	[ "$(q '.jobs[0].tiers' "$tmp/$f.json")" = 3 ] || fail "$f: not 3 tiers"
done
[ "$(q '.jobs[0].encoding' "$tmp/f12-i32.json")" = i32 ] || fail "f12-i32: not i32"
[ "$(q '.jobs[0].retransmits > 0' "$tmp/f12-lossy.json")" = true ] || fail "f12-lossy: no retransmits"
[ "$(q '[.links[] | select(.b == "core0") | .directions[].lost] | add > 0' "$tmp/f12-lossy.json")" = true ] ||
	fail "f12-lossy: nothing lost on the spines' uplinks"

# three-jobs: three jobs asking 64 lanes of 96 slots. First-come: the first
# runs, the others are refused (exit 1, the refusal in their error). Fair
# with share_total 3: 32 lanes each, every sum right, Jain's index of the
# three goodputs at least 0.95.
set +e
"$sim" --quiet --json "$tmp/tj-fc.json" "$src/topologies/three-jobs.yaml" 2>"$tmp/err"
rc=$?
set -e
[ $rc = 1 ] || fail "three-jobs first-come: exit $rc, not 1"
[ "$(q '[.jobs[] | select(.state == "ok")] | length' "$tmp/tj-fc.json")" = 1 ] ||
	fail "three-jobs first-come: not one job ok"
q '.jobs[1].error' "$tmp/tj-fc.json" | grep -q "contiguous slots" ||
	fail "three-jobs first-come: job 2's error does not say it found no slots"
sed 's/^    share: first-come/    share: fair\n    share_total: 3/' \
	"$src/topologies/three-jobs.yaml" >"$tmp/tj-fair.yaml"
timeout 120 "$sim" --quiet --json "$tmp/tj-fair.json" "$tmp/tj-fair.yaml" 2>"$tmp/err" ||
	fail "three-jobs fair: exit $? ($(tail -1 "$tmp/err"))"
[ "$(q '[.jobs[] | select(.state == "ok" and .sums_checked == 20)] | length' "$tmp/tj-fair.json")" = 3 ] ||
	fail "three-jobs fair: not every job ok with 20 sums checked"
grep -c "admitted with 32 of the 64 lanes" "$tmp/err" | grep -qx 3 ||
	fail "three-jobs fair: not 32 lanes each ($(grep admitted "$tmp/err"))"
jain=$(q '[.jobs[].goodput_bps] | (add * add) / (length * (map(. * .) | add))' "$tmp/tj-fair.json")
awk -v j="$jain" 'BEGIN { exit !(j >= 0.95) }' || fail "three-jobs fair: Jain's index $jain < 0.95"
# Fair without share_total: the first job takes 64 lanes and gives back at
# round boundaries as the others come; all end on 32, every sum right.
sed 's/^    share: first-come/    share: fair/' "$src/topologies/three-jobs.yaml" >"$tmp/tj-gb.yaml"
timeout 120 "$sim" --quiet --json "$tmp/tj-gb.json" "$tmp/tj-gb.yaml" 2>"$tmp/err" ||
	fail "three-jobs give-back: exit $? ($(tail -1 "$tmp/err"))"
[ "$(q '[.jobs[] | select(.state == "ok" and .sums_checked == 20)] | length' "$tmp/tj-gb.json")" = 3 ] ||
	fail "three-jobs give-back: not every job ok with 20 sums checked"
grep -q "job 1: now on 32 lanes" "$tmp/err" || fail "three-jobs give-back: job 1 not on 32 lanes"
jain=$(q '[.jobs[].goodput_bps] | (add * add) / (length * (map(. * .) | add))' "$tmp/tj-gb.json")
awk -v j="$jain" 'BEGIN { exit !(j >= 0.95) }' || fail "three-jobs give-back: Jain's index $jain < 0.95"

# tenants: two tenants, one attacking the other's job (tenant mode, tags,
# JOIN cookies): both jobs ok with every sum checked, every kind of attack
# sent, no more bytes back to the attacker than it sent from its own address,
# its tag forgeries dropped; the report's text says so too.
run tenants "$tmp/tenants.json"
[ "$(q '[.jobs[] | select(.state == "ok")] | length' "$tmp/tenants.json")" = 2 ] ||
	fail "tenants: not both jobs ok"
[ "$(q '.jobs[0].tenant' "$tmp/tenants.json")" = alice ] || fail "tenants: job 0 not alice's"
[ "$(q '[.attacks[0].sent[] | select(. > 0)] | length' "$tmp/tenants.json")" = 8 ] ||
	fail "tenants: not every kind of attack sent"
[ "$(q '.attacks[0].bytes_back <= .attacks[0].bytes_sent_own' "$tmp/tenants.json")" = true ] ||
	fail "tenants: the switch sent the attacker more than it sent"
"$sim" "$src/topologies/tenants.yaml" 2>/dev/null | grep -q "attack from h3 on job alice-job" ||
	fail "tenants: the text report has no attack"

# A file that does not load: one line, exit 2.
echo 'name: [' >"$tmp/bad.yaml"
set +e
"$sim" "$tmp/bad.yaml" >/dev/null 2>"$tmp/err"
rc=$?
set -e
[ $rc = 2 ] || fail "a bad file: exit $rc, not 2"
[ "$(wc -l <"$tmp/err")" = 1 ] || fail "a bad file: not one line of error"
echo "sim_topologies: ok"
