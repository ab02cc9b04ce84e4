#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Model-checks the lane protocol (tests/model/lane.pml) with Spin: generates
# the verifier in a temporary directory, compiles it with gcc, runs it under
# nice, and fails unless pan reports "errors: 0" for a complete search.
#   safety    assertions (every sum right, no result twice, next pointers,
#             DEFERRED, WAIT) and invalid end states, exhaustive (COLLAPSE),
#             with f32 lane openers and with i32's OPEN (-DI32), and every
#             one of the 65,536 inputs without faults (-DNPAT=16)
#   liveness  the ltl claim 'closes' (every worker closes after every round)
#             under weak fairness (pan -a -f), exhaustive, f32
#   liveness_i32  the same with -DI32 (not in ctest: 3 more minutes)
#   gc        the safety check of a smaller instance without gc() (-DNOGC),
#             f32 and i32: every packet gc() takes out would have been dropped
#   mutants   five deliberate protocol bugs, each of which must be caught
#   all       all of the above
# Exits 77 (skipped) when spin is not installed (scripts/deps installs it).
# Memory: pan stops at 4 GiB (-DMEMLIM); the checks need about 1.5 GiB.
# Usage: tests/model/check.sh BUILD_DIR [safety|liveness|liveness_i32|gc|mutants|all]
set -euo pipefail
build=$1
mode=${2:-all}
here=$(cd "$(dirname "$0")" && pwd)
model=$here/lane.pml
if ! command -v spin >/dev/null 2>&1; then
    echo "spin not installed (scripts/deps installs it): skipped"
    exit 77
fi
mkdir -p "$build"
tmp=$(mktemp -d "$build/model.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# run NAME EXPECT SPIN_DEFS GCC_DEFS PAN_ARGS [MODEL]: EXPECT is pass or fail.
run() {
    local name=$1 expect=$2 sdefs=$3 cdefs=$4 args=$5 src=${6:-$model}
    local d=$tmp/$name out ok=1 t0 t1
    mkdir -p "$d"
    cp "$src" "$d/lane.pml"
    # shellcheck disable=SC2086
    (cd "$d" && spin $sdefs -a lane.pml >spin.log 2>&1) || { cat "$d/spin.log"; return 1; }
    # shellcheck disable=SC2086
    (cd "$d" && gcc -O2 -w -DMEMLIM=4096 $cdefs -o pan pan.c) || return 1
    t0=$(date +%s)
    # shellcheck disable=SC2086
    (cd "$d" && nice ./pan $args >pan.log 2>&1) || true
    t1=$(date +%s)
    out=$d/pan.log
    grep -q 'errors: 0$' "$out" || ok=0
    grep -Eq 'out of memory|max search depth too small|Search not completed' "$out" && ok=0
    if [ "$expect" = pass ]; then
        if [ $ok = 1 ]; then
            printf '%-22s ok   %s; %s; %s s\n' "$name" \
                "$(grep -E 'states, stored' "$out" | sed 's/^ *//')" \
                "$(grep -E 'total actual memory' "$out" | sed 's/^ *//')" $((t1 - t0))
            return 0
        fi
        echo "$name: FAILED ($sdefs $cdefs $args)"
        sed -n '1,60p' "$out"
        if ls "$d"/*.trail >/dev/null 2>&1; then
            echo "--- counterexample (spin -t -p, last 80 lines):"
            (cd "$d" && spin $sdefs -t -p -g lane.pml 2>&1 | tail -80)
        fi
        return 1
    fi
    # a mutant: the check must find an error
    if [ $ok = 0 ] && grep -Eq 'errors: [1-9]' "$out"; then
        printf '%-22s ok   caught: %s (%s s)\n' "$name" \
            "$(grep -E 'assertion violated|acceptance cycle|invalid end state' "$out" |
               head -1 | cut -c1-70)" $((t1 - t0))
        return 0
    fi
    echo "$name: FAILED: the mutant was not caught"
    sed -n '1,30p' "$out"
    return 1
}

# mutant NAME MODE OLD NEW [SPIN_DEFS]: lane.pml with OLD replaced by NEW.
mutant() {
    local name=$1 kind=$2 old=$3 new=$4 sdefs=${5:-} f=$tmp/$1.pml
    perl -e 'local $/; my ($o, $n, $in, $out) = @ARGV; open(my $i, "<", $in) or die;
        my $s = <$i>; index($s, $o) >= 0 or die "mutant: pattern not in lane.pml: $o\n";
        $s =~ s/\Q$o\E/$n/g; open(my $f, ">", $out) or die; print $f $s' \
        "$old" "$new" "$model" "$f"
    if [ "$kind" = safety ]; then
        run "$name" fail "$sdefs" "-DNOCLAIM -DCOLLAPSE" "-m200000 -w22" "$f"
    else
        run "$name" fail "$sdefs" "-DCOLLAPSE" "-m200000 -w22 -a -f" "$f"
    fi
}

safety() {
    run safety pass "" "-DNOCLAIM -DCOLLAPSE" "-m200000 -w25" &&
        run safety_i32 pass "-DI32" "-DNOCLAIM -DCOLLAPSE" "-m200000 -w25" &&
        run safety_inputs pass "-DNPAT=16 -DMAXDROP=0 -DMAXDUP=0 -DMAXSLOW=0" \
            "-DNOCLAIM -DCOLLAPSE" "-m200000 -w25"
}
liveness() {
    run liveness pass "" "-DCOLLAPSE" "-m200000 -w25 -a -f"
}
liveness_i32() {
    run liveness_i32 pass "-DI32" "-DCOLLAPSE" "-m200000 -w25 -a -f"
}
gc_check() {
    run safety_nogc pass "-DNOGC -DNPAT=1 -DMAXSLOW=1" "-DNOCLAIM -DCOLLAPSE" "-m200000 -w23" &&
        run safety_nogc_i32 pass "-DI32 -DNOGC -DNPAT=1 -DMAXSLOW=1" "-DNOCLAIM -DCOLLAPSE" \
            "-m200000 -w23"
}
mutants() {
    # the switch adds a duplicate again: a wrong sum
    mutant mut_dup_added safety ':: x && ((sh[y].bitmap >> P_RANK(pk)) & 1) ->' ':: false ->'
    # the switch keeps the first next pointer, not the smallest
    mutant mut_next_not_min safety ':: P_NEXT(pk) < sh[y].next -> sh[y].next = P_NEXT(pk)' \
        ':: P_NEXT(pk) < sh[y].next && sh[y].next == END -> sh[y].next = P_NEXT(pk)'
    # no shadow replies: a worker whose result was lost never gets it
    mutant mut_no_shadow liveness 'emit(RESULT_PKT(P_RANK(pk), b, y))	/* shadow_replies */' 'skip'
    # the job is freed at the first FIN, not the last
    mutant mut_free_first_fin liveness ':: job_finished == FULL -> job_active = 0' \
        ':: true -> job_active = 0'
    # an idle half reopens for a finished round (seen without gc())
    mutant mut_reopen_round safety '(s_has_round[b] && P_ROUND(pk) <= s_last_round[b])' 'false' \
        "-DNOGC -DNPAT=1 -DMAXSLOW=1"
}

rc=0
case $mode in
safety) safety || rc=1 ;;
liveness) liveness || rc=1 ;;
liveness_i32) liveness_i32 || rc=1 ;;
gc) gc_check || rc=1 ;;
mutants) mutants || rc=1 ;;
all)
    safety || rc=1
    gc_check || rc=1
    mutants || rc=1
    liveness || rc=1
    liveness_i32 || rc=1
    ;;
*) echo "usage: $0 BUILD_DIR [safety|liveness|liveness_i32|gc|mutants|all]" >&2; exit 2 ;;
esac
exit $rc
