#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration test of ina-sim on the shipped topologies: rack4 and
# rack4-lossy run with every sum checked (exit 0, state ok, hosts x rounds
# sums, loss seen and repaired on the lossy one); the same file and seed give
# the same JSON report (wall times aside), another seed other losses and the
# same verdict; two-racks and fabric-1024 are refused with the reason
# (hierarchical aggregation) and still get their ring allreduce time; a file
# that does not load is exit status 2.
# Usage: sim_topologies.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
sim=$build/sim/ina-sim
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "sim_topologies: $*" >&2; exit 1; }
run() {	# FILE OUT [args]: ina-sim's JSON, minus the wall times
	local f=$1 out=$2
	shift 2
	timeout 120 "$sim" --quiet --json "$tmp/raw.json" "$@" "$src/topologies/$f.yaml" \
		2>"$tmp/err" || fail "$f: exit $? ($(tail -1 "$tmp/err"))"
	jq -S 'del(.wall)' "$tmp/raw.json" >"$out"
}
q() { jq -r "$1" "$2"; }

for f in rack4 rack4-lossy; do
	run $f "$tmp/$f.json"
	[ "$(q '.jobs[0].state' "$tmp/$f.json")" = ok ] || fail "$f: not ok"
	[ "$(q '.jobs[0].sums_checked' "$tmp/$f.json")" = 40 ] || fail "$f: not 40 sums checked"
	[ "$(q '.jobs[0].rounds_done' "$tmp/$f.json")" = 10 ] || fail "$f: not 10 rounds"
	[ "$(q '.jobs[0].ring.time_ns > 0' "$tmp/$f.json")" = true ] || fail "$f: no ring time"
	[ "$(q '.links | length' "$tmp/$f.json")" = 4 ] || fail "$f: not 4 links"
done
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

# Jobs across switches: refused with the reason, the ring model still there.
for f in two-racks fabric-1024; do
	run $f "$tmp/$f.json"
	[ "$(q '.jobs[0].state' "$tmp/$f.json")" = refused ] || fail "$f: not refused"
	q '.jobs[0].why' "$tmp/$f.json" | grep -q 'hierarchical aggregation' ||
		fail "$f: the reason does not name hierarchical aggregation"
	[ "$(q '.jobs[0].ring.time_ns > 0' "$tmp/$f.json")" = true ] || fail "$f: no ring time"
done
[ "$(q '.jobs[0].ring.steps' "$tmp/fabric-1024.json")" = 2046 ] || fail "fabric-1024: steps"

# A file that does not load: one line, exit 2.
echo 'name: [' >"$tmp/bad.yaml"
set +e
"$sim" "$tmp/bad.yaml" >/dev/null 2>"$tmp/err"
rc=$?
set -e
[ $rc = 2 ] || fail "a bad file: exit $rc, not 2"
[ "$(wc -l <"$tmp/err")" = 1 ] || fail "a bad file: not one line of error"
echo "sim_topologies: ok"
