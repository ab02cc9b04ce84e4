#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Test of ina-bench-formats (bench/README.md, "Wire bytes by format"): its
# --json on the shipped gradients has the issue's keys (dense_bytes,
# fixed_block_bytes, ina_bytes, mass_kept) and the bf16 ones, and the figures
# hold their invariants: every sparse format keeps at least the mass asked for,
# ina < fixed-256 < dense at mass 0.5, bytes = up + down, header-only packets
# are a part of all packets, the oracle's modelled time is the least, the
# sub-block rows (ina-sub, ina-sub-bf16) meet issue 18's goals on the shipped
# gradients (bytes <= 20% of fixed-256 at 0.5 and 0.7, packets <= 1.2 times
# ina-1024's), and two runs print the same (it counts, it does not time).
# Bad options fail. Needs jq (skipped, exit 77, without it).
# Usage: bench_formats.sh BUILD_DIR
set -euo pipefail
build=$1
bin=$build/bench/ina-bench-formats
command -v jq >/dev/null || { echo "jq not found: skipped"; exit 77; }
. "$(dirname "$0")/lib.sh"
lib_init

fail() { echo "FAIL: $*" >&2; exit 1; }
check() { # check NAME JQ-EXPRESSION FILE: the expression must be true
    jq -e "$2" "$3" >/dev/null || fail "$1 ($(jq -c "$2" "$3" 2>&1))"
}

"$bin" --json >"$tmp/a.json"
"$bin" --json >"$tmp/b.json"
cmp -s "$tmp/a.json" "$tmp/b.json" || fail "two runs differ"
j=$tmp/a.json

keys='["dense_bytes","fixed_block_bytes","ina_bytes","mass_kept","ina_bf16_bytes","ina_bf16_mass_kept"]'
check "top-level keys are numbers" "$keys as \$k | . as \$o | all(\$k[]; (\$o[.] | type) == \"number\")" "$j"
check "three rows at 0.5, 0.7, 0.9" '[.rows[].mass_target] == [0.5, 0.7, 0.9]' "$j"
check "every row has the keys" "$keys as \$k | all(.rows[]; . as \$r | all(\$k[]; (\$r[.] | type) == \"number\"))" "$j"
check "top level is the last row" '.rows[-1] as $r | .dense_bytes == $r.dense_bytes and
    .fixed_block_bytes == $r.fixed_block_bytes and .ina_bytes == $r.ina_bytes and
    .mass_kept == $r.mass_kept and .ina_bf16_bytes == $r.ina_bf16_bytes and
    .ina_bf16_mass_kept == $r.ina_bf16_mass_kept' "$j"
check "mass 0.5: ina < fixed < dense" '.rows[0] | .ina_bytes < .fixed_block_bytes and
    .fixed_block_bytes < .dense_bytes' "$j"
check "every mass: ina and ina-bf16 < fixed < dense" 'all(.rows[]; .ina_bytes < .fixed_block_bytes
    and .ina_bf16_bytes < .fixed_block_bytes and .fixed_block_bytes < .dense_bytes)' "$j"
check "ina-bf16 < ina" 'all(.rows[]; .ina_bf16_bytes < .ina_bytes)' "$j"
check "mass kept >= the target" 'all(.rows[]; .mass_kept >= .mass_target and
    .ina_bf16_mass_kept >= .mass_target and .fixed_mass_kept >= .mass_target and
    .mass_kept <= 1 and .ina_bf16_mass_kept <= 1)' "$j"
check "dense does not depend on the mass" '[.rows[].dense_bytes] | unique | length == 1' "$j"
check "bytes = up + down, headers in pkts" 'all(.rows[]; . as $r | all("dense", "fixed", "ina",
    "ina_bf16"; $r[. + "_bytes"] == $r[. + "_up_bytes"] + $r[. + "_down_bytes"] and
    $r[. + "_empty_up_pkts"] + $r[. + "_empty_down_pkts"] <= $r[. + "_pkts"] and
    $r[. + "_bytes"] >= 56 * $r[. + "_pkts"]))' "$j"
check "old names agree" 'all(.rows[]; .oracle_bytes == .ina_oracle_bytes and
    .fixed_block_bytes == .fixed_bytes and .block_sizes == .ina_block_sizes and
    .oracle_block_sizes == .ina_oracle_block_sizes)' "$j"
check "oracle's time <= planner's" 'all(.rows[]; .ina_oracle_model_ms <= .ina_model_ms and
    .ina_bf16_oracle_model_ms <= .ina_bf16_model_ms)' "$j"
check "sub rows: bytes = up + down, mass kept" 'all(.rows[]; . as $r | all("ina_1024", "ina_sub",
    "ina_sub_bf16"; $r[. + "_bytes"] == $r[. + "_up_bytes"] + $r[. + "_down_bytes"] and
    $r[. + "_bytes"] >= 56 * $r[. + "_pkts"] and $r[. + "_mass_kept"] >= $r.mass_target))' "$j"
check "sub rows: b cuts B in at most 128" '.iterations as $n | all(.rows[]; . as $r |
    all("ina_sub", "ina_sub_bf16"; ($r[. + "_block_sizes"] | length) == $n and
    ([$r[. + "_block_sizes"], $r[. + "_sub_blocks"]] | transpose |
     all(.[0] % .[1] == 0 and .[0] / .[1] <= 128 and .[1] >= 8))))' "$j"
check "goal: ina-sub <= 20% of fixed at 0.5 and 0.7" '[.rows[] | select(.mass_target <= 0.7) |
    .ina_sub_vs_fixed <= 0.2] | all' "$j"
check "goal: packets <= 1.2 x ina-1024" 'all(.rows[]; .ina_sub_pkts_vs_1024 <= 1.2 and
    .ina_sub_pkts <= 1.2 * .ina_1024_pkts)' "$j"
check "block sizes per iteration" '.iterations as $n | all(.rows[];
    (.ina_block_sizes | length) == $n and (.ina_bf16_block_sizes | length) == $n)' "$j"

# One fraction: one row, and the top level is that row.
"$bin" --json --mass 0.5 >"$tmp/one.json"
check "--mass 0.5: one row" '(.rows | length) == 1 and .mass_target == 0.5 and
    .ina_bytes == .rows[0].ina_bytes' "$tmp/one.json"
jq -e --slurpfile all "$j" '.rows[0] == $all[0].rows[0]' "$tmp/one.json" >/dev/null ||
    fail "--mass 0.5 differs from the first row of the default run"

# The table prints every format for every fraction.
"$bin" >"$tmp/table.txt"
for f in dense fixed-256 ina ina-bf16 ina-1024 ina-sub ina-sub-bf16; do
    [ "$(grep -c "^0\.[579]0 *$f " "$tmp/table.txt")" = 3 ] || fail "table: $f rows"
done

# Bad options fail.
for bad in "--lanes 0" "--lanes 65536" "--lanes -1" "--mass 2" "--mass 0" "--max-pkt 100" "--first-block 8" \
    "--plan-headroom 1" "--input /nonexistent.npy" "--packet-ns -1" "--byte-ns x" \
    "--packet-ns 0 --byte-ns 0" "extra"; do
    # shellcheck disable=SC2086
    if "$bin" $bad >/dev/null 2>&1; then fail "accepted: $bad"; fi
done
echo "ina-bench-formats: all checks passed"
