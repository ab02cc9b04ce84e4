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
#   mutants   five deliberate protocol bugs, each of which must be caught,
#             and four of the failover variant, and the failover spec's
#             standby linger as written (-DR_LINGER_SPEC), whose liveness
#             counterexample must be found
#   failover  the replica and failover (-DFAILOVER): a primary that may
#             crash once, a replica, the workers' failover; safety of a
#             smaller instance (one loss, no duplicate, one slow peer), and
#             with 16 inputs also with one duplicate
#   failover_liveness  the ltl claim 'closes' for -DFAILOVER (16 inputs,
#             up to two losses, no duplicate, one slow peer)
#   ssp       bounded staleness (tests/model/ssp.pml, ssp:1, 7 rounds):
#             safety (every result the sum of the ranks it names, the same
#             bits for every worker, the staleness bound, no rank left out
#             twice in a row, results plus residuals = every gradient), the
#             same without gc(), duplicates and half reuse (-DNOGC, 5 rounds), and
#             four deliberate bugs that must be caught
#   ssp_liveness  the ltl claim 'finishes' for ssp.pml (one loss, no
#             duplicate, one slow peer)
#   reshape   the give-back of --share fair (tests/model/reshape.pml: two
#             lanes to one from round R = M + 2, three blocks, four rounds):
#             safety (every sum right, no block twice, every block of a
#             round, nothing touches the freed slot, nobody on two lanes
#             when it is freed) with two losses and one duplicate, with three
#             losses, two duplicates and two slow peers, with two blocks; the
#             same without gc() (-DNOGC); three lanes to two (-DL3); and six
#             deliberate bugs that must be caught
#   reshape_liveness  the ltl claim 'finishes' for reshape.pml, two lanes to
#             one and three to two
#   bind      bound addresses and the new-epoch re-JOIN (tests/model/bind.pml:
#             two ranks, two rounds, an attacker that knows the token and the
#             epoch and forges two packets: DATA, FIN, LEAVE, KEEPALIVE or a
#             JOIN from its own address): safety (every result both ranks'
#             own values, no worker left waiting), with three forged packets,
#             and five deliberate bugs that must be caught
#   all       all of the above
# Exits 77 (skipped) when spin is not installed (scripts/deps installs it).
# Memory: pan stops at 4 GiB (-DMEMLIM); the checks need up to 2.2 GiB.
# Usage: tests/model/check.sh BUILD_DIR [safety|liveness|liveness_i32|gc|mutants|failover|
#                                        failover_liveness|ssp|ssp_liveness|reshape|
#                                        reshape_liveness|bind|all]
set -euo pipefail
build=$1
mode=${2:-all}
here=$(cd "$(dirname "$0")" && pwd)
model=$here/lane.pml
ssp_model=$here/ssp.pml
rs_model=$here/reshape.pml
bind_model=$here/bind.pml
if ! command -v spin >/dev/null 2>&1; then
    echo "spin not installed (scripts/deps installs it): skipped"
    exit 77
fi
mkdir -p "$build"
tmp=$(mktemp -d "$build/model.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# pan is compiled with gcc -O2 and, for a safety check (no claim), -DSAFETY,
# which leaves out the code of the cycle search: the same states, a quarter
# less time (partial-order reduction stays on: no -DNOREDUCE anywhere;
# -DCOLLAPSE saves memory, not time).
SAFE="-DNOCLAIM -DSAFETY -DCOLLAPSE"
# A mutant's pan finds its error in under 5 s, while gcc -O2 takes 6 to 20 s
# to compile it: -O0 (1 to 2 s; the last -O given is the one gcc uses).
MUT="-O0"

# run NAME EXPECT SPIN_DEFS GCC_DEFS PAN_ARGS [MODEL]: EXPECT is pass or fail.
run() {
    local name=$1 expect=$2 sdefs=$3 cdefs=$4 args=$5 src=${6:-$model}
    local d=$tmp/$name out ok=1 t0 t1 tc
    tc=$(date +%s)
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
            printf '%-22s ok   %s; %s; %s s (+ %s s to build)\n' "$name" \
                "$(grep -E 'states, stored' "$out" | sed 's/^ *//')" \
                "$(grep -E 'total actual memory' "$out" | sed 's/^ *//')" $((t1 - t0)) $((t0 - tc))
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
        printf '%-22s ok   caught: %s (%s s + %s s to build)\n' "$name" \
            "$(grep -E 'assertion violated|acceptance cycle|invalid end state' "$out" |
               head -1 | cut -c1-70)" $((t1 - t0)) $((t0 - tc))
        return 0
    fi
    echo "$name: FAILED: the mutant was not caught"
    sed -n '1,30p' "$out"
    return 1
}

# mutant NAME MODE OLD NEW [SPIN_DEFS [MODEL]]: lane.pml (or MODEL) with OLD
# replaced by NEW.
mutant() {
    local name=$1 kind=$2 old=$3 new=$4 sdefs=${5:-} src=${6:-$model} f=$tmp/$1.pml
    perl -e 'local $/; my ($o, $n, $in, $out) = @ARGV; open(my $i, "<", $in) or die;
        my $s = <$i>; index($s, $o) >= 0 or die "mutant: pattern not in $in: $o\n";
        $s =~ s/\Q$o\E/$n/g; open(my $f, ">", $out) or die; print $f $s' \
        "$old" "$new" "$src" "$f"
    if [ "$kind" = safety ]; then
        run "$name" fail "$sdefs" "$MUT $SAFE" "-m200000 -w22" "$f"
    else
        run "$name" fail "$sdefs" "$MUT -DCOLLAPSE" "-m200000 -w22 -a -f" "$f"
    fi
}

safety() {
    run safety pass "" "$SAFE" "-m200000 -w25" &&
        run safety_i32 pass "-DI32" "$SAFE" "-m200000 -w25" &&
        run safety_inputs pass "-DNPAT=16 -DMAXDROP=0 -DMAXDUP=0 -DMAXSLOW=0" \
            "$SAFE" "-m200000 -w25"
}
liveness() {
    run liveness pass "" "-DCOLLAPSE" "-m200000 -w25 -a -f"
}
liveness_i32() {
    run liveness_i32 pass "-DI32" "-DCOLLAPSE" "-m200000 -w25 -a -f"
}
gc_check() {
    run safety_nogc pass "-DNOGC -DNPAT=1 -DMAXSLOW=1" "$SAFE" "-m200000 -w23" &&
        run safety_nogc_i32 pass "-DI32 -DNOGC -DNPAT=1 -DMAXSLOW=1" "$SAFE" \
            "-m200000 -w23"
}
mutants() {
    local ok=0
    # the switch adds a duplicate again: a wrong sum
    mutant mut_dup_added safety ':: x && ((sh[y].bitmap >> P_RANK(pk)) & 1) ->' ':: false ->' || ok=1
    # the switch keeps the first next pointer, not the smallest
    mutant mut_next_not_min safety ':: P_NEXT(pk) < sh[y].next -> sh[y].next = P_NEXT(pk)' \
        ':: P_NEXT(pk) < sh[y].next && sh[y].next == END -> sh[y].next = P_NEXT(pk)' || ok=1
    # no shadow replies: a worker whose result was lost never gets it
    mutant mut_no_shadow liveness 'emit(RESULT_PKT(P_RANK(pk), b, y))	/* shadow_replies */' 'skip' || ok=1
    # the job is freed at the first FIN, not the last
    mutant mut_free_first_fin liveness ':: job_finished == FULL -> job_active = 0' \
        ':: true -> job_active = 0' || ok=1
    # an idle half reopens for a finished round (seen without gc())
    mutant mut_reopen_round safety '(s_has_round[b] && P_ROUND(pk) <= s_last_round[b])' 'false' \
        "-DNOGC -DNPAT=1 -DMAXSLOW=1" || ok=1
    return $ok
}

# The failover instance (docs/PROTOCOL.md section 12): the crash, at most one
# loss, no duplicate, one slow-peer timeout; FO_SMALL has the supports
# {1,3} and {0,2,3} only (16 inputs).
FO="-DFAILOVER -DMAXDROP=1 -DMAXDUP=0 -DMAXSLOW=1"
FO_SMALL="$FO -DNPAT=2"
failover() {
    run fo_safety pass "$FO" "$SAFE" "-m200000 -w25" &&
        run fo_safety_dup pass "-DFAILOVER -DMAXDROP=1 -DMAXDUP=1 -DMAXSLOW=1 -DNPAT=2" \
            "$SAFE" "-m200000 -w24"
}
failover_liveness() {
    run fo_liveness pass "-DFAILOVER -DMAXDROP=2 -DMAXDUP=0 -DMAXSLOW=1 -DNPAT=2" \
        "-DCOLLAPSE" "-m200000 -w24 -a -f"
}
fo_mutants() {
    local ok=0
    # the spec as written: R's standby job lingers out before a worker on a
    # crashed P asks it to take over (/work/replica-spec-flaws.md, flaw 1)
    run spec_r_linger fail "$FO_SMALL -DR_LINGER_SPEC" "$MUT -DCOLLAPSE" "-m200000 -w22 -a -f" ||
        ok=1
    # R stores fan-outs only, not shadow replies: a worker is past R's result
    mutant mut_fo_shadow_unstored liveness \
        ':: NEWER(pk, r_store[y]) -> r_store[y] = FWD(pk, 0)	/* store */' \
        ':: NEWER(pk, r_store[y]) && P_ALL(pk) -> r_store[y] = FWD(pk, 0)' "$FO_SMALL" || ok=1
    # R reopens the stored block instead of its next
    mutant mut_fo_open_stored liveness \
        'half_open(2 * y + s_cur[y], P_ROUND(q), P_NEXT(q))	/* restore_open */' \
        'half_open(2 * y + s_cur[y], P_ROUND(q), P_BLOCK(q))' "$FO_SMALL" || ok=1
    # R's open block starts with the stored sum in it: a double count
    mutant mut_fo_open_not_empty safety \
        'half_open(2 * y + s_cur[y], P_ROUND(q), P_NEXT(q))	/* restore_open */' \
        'half_open(2 * y + s_cur[y], P_ROUND(q), P_NEXT(q)); sh[2 * y + s_cur[y]].acc = P_VAL(q)' \
        "$FO_SMALL" || ok=1
    # R keeps the stored result's version bit as current: the open block
    # overwrites the shadow and takes the wrong half
    mutant mut_fo_same_version liveness 's_cur[y] = 1 - P_VER(q);' 's_cur[y] = P_VER(q);' \
        "$FO_SMALL" || ok=1
    return $ok
}

# Bounded staleness (ssp.pml): ssp:1, two workers, seven rounds.
ssp() {
    local ok=0
    run ssp_safety pass "" "$SAFE" "-m200000 -w25" "$ssp_model" || ok=1
    run ssp_nogc pass "-DNOGC -DMAXDUP=0 -DNR=5" "$SAFE" "-m200000 -w24" \
        "$ssp_model" || ok=1
    # the switch closes a block early without the fairness condition: a
    # slow rank is left out twice in a row
    mutant mut_ssp_unfair safety \
        ':: k != 255 && ((FULL & ~sh[y].bitmap) & ~sh[k].bitmap) == 0 ->' ':: true ->' \
        "" "$ssp_model" || ok=1
    # the worker forgets a contribution a result lacks: a gradient lost
    mutant mut_ssp_no_residual safety \
        'residual[me] = residual[me] + sentv[y]	/* missed */' 'skip' "" "$ssp_model" || ok=1
    # the worker runs S + 1 rounds ahead: the staleness bound broken
    mutant mut_ssp_bound safety 'w_next[me] <= w_low[me] + S ->' \
        'w_next[me] <= w_low[me] + S + 1 ->' "" "$ssp_model" || ok=1
    # no answer from the kept result: a rank whose result was lost, or that
    # comes late, never gets it
    mutant mut_ssp_no_late_answer liveness ':: sh[y].state == H_RESULT && sh[y].round == q ->' \
        ':: false ->' "-DMAXDUP=0" "$ssp_model" || ok=1
    return $ok
}
ssp_liveness() {
    run ssp_liveness pass "-DMAXDUP=0" "-DCOLLAPSE" "-m200000 -w24 -a -f" "$ssp_model"
}

# The give-back (reshape.pml): two workers, two lanes to one, three blocks,
# four rounds.
reshape() {
    local ok=0
    run rs_safety pass "" "$SAFE" "-m200000 -w25" "$rs_model" || ok=1
    run rs_faults pass "-DNR=3 -DMAXDROP=3 -DMAXDUP=2 -DMAXSLOW=2" "$SAFE" \
        "-m200000 -w25" "$rs_model" || ok=1
    run rs_nb2 pass "-DNB=2 -DMAXDROP=3 -DMAXDUP=2" "$SAFE" "-m200000 -w24" \
        "$rs_model" || ok=1
    run rs_nogc pass "-DNOGC -DNR=3" "$SAFE" "-m200000 -w24" "$rs_model" || ok=1
    # three lanes to two (-DL3): lane 1 kept while its blocks change
    run rs_l3 pass "-DL3 -DNR=3 -DMAXDROP=1 -DMAXDUP=1 -DMAXSLOW=0" "$SAFE" \
        "-m200000 -w24" "$rs_model" || ok=1
    # the switch frees lane 1 as soon as one rank moves on: the other
    # still needs it
    mutant mut_rs_free_first safety ':: s_moved == FULL -> reshape_done()' \
        ':: s_moved != 0 -> reshape_done()' "" "$rs_model" || ok=1
    # RESHAPE on first sends only, not on shadow replies: a worker whose
    # results of round R - 1 were lost runs round R on two lanes
    mutant mut_rs_shadow_unmarked safety 'po = RESULT_PKT(P_RANK(pk), b, y, MARKED(y));' \
        'po = RESULT_PKT(P_RANK(pk), b, y, 0);' "-DNB=2" "$rs_model" || ok=1
    # the worker runs on L' as soon as it hears RESHAPE, in round R - 1
    mutant mut_rs_worker_early safety 'e_rs[me] = 1	/* reshape_lanes */' \
        'e_rs[me] = 1; e_lanes[me] = NL2' "" "$rs_model" || ok=1
    # the switch validates every round against L' once it decided: a
    # lane-1 DATA of round R - 1 is refused
    mutant mut_rs_validate_all liveness '(s_pending && P_ROUND(p) >= s_R)' '(s_pending)' \
        "" "$rs_model" || ok=1
    # the job's lanes stay L after the free: a late lane-1 DATA reaches the
    # slot another job now holds
    mutant mut_rs_lanes_kept safety '	s_lanes = NL2;' '	s_lanes = NL;' "" "$rs_model" || ok=1
    # R = M + 1: results of round M went out unmarked
    mutant mut_rs_r_m1 safety ':: s_has_max -> s_R = s_max + 2' ':: s_has_max -> s_R = s_max + 1' \
        "" "$rs_model" || ok=1
    return $ok
}
reshape_liveness() {
    run rs_liveness pass "" "-DCOLLAPSE" "-m200000 -w25 -a -f" "$rs_model" &&
        run rs_l3_liveness pass "-DL3 -DNR=3 -DMAXDROP=2 -DMAXDUP=0 -DMAXSLOW=0" "-DCOLLAPSE" \
            "-m200000 -w24 -a -f" "$rs_model"
}

# The bound addresses (docs/PROTOCOL.md 12.4): safety with two and three
# forged packets, and five bugs: DATA, FIN or LEAVE taken from any address;
# a re-JOIN from a new address that moves the rank silently (as before), or
# that ends the run without telling the rank's old address.
bind_check() {
    local ok=0
    run bind_safety pass "" "$SAFE" "-m200000 -w22" "$bind_model" &&
        run bind_safety3 pass "-DNFORGE=3" "$SAFE" "-m200000 -w24" "$bind_model" || ok=1
    mutant mut_data_any_addr safety ':: bound[r] != src -> skip /* wrong_address (DATA) */' \
        ':: false -> skip' "" "$bind_model" || ok=1
    mutant mut_fin_any_addr safety ':: bound[r] != src -> skip /* wrong_address (FIN) */' \
        ':: false -> skip' "" "$bind_model" || ok=1
    mutant mut_leave_any_addr safety ':: bound[r] != src -> skip /* wrong_address (LEAVE) */' \
        ':: false -> skip' "" "$bind_model" || ok=1
    mutant mut_silent_move safety 'aborted = 1;
				tell_left(joined & ~finished)' 'bound[r] = src;
				send(src, JOIN_ACK, epoch, 0, 0)' "" "$bind_model" || ok=1
    mutant mut_rebind_untold safety 'tell_left(joined & ~finished)' \
        'tell_left(joined & ~finished & ~(1 << r))' "" "$bind_model" || ok=1
    return $ok
}

rc=0
case $mode in
safety) safety || rc=1 ;;
liveness) liveness || rc=1 ;;
liveness_i32) liveness_i32 || rc=1 ;;
gc) gc_check || rc=1 ;;
mutants)
    mutants || rc=1
    fo_mutants || rc=1
    ;;
failover) failover || rc=1 ;;
failover_liveness) failover_liveness || rc=1 ;;
ssp) ssp || rc=1 ;;
ssp_liveness) ssp_liveness || rc=1 ;;
reshape) reshape || rc=1 ;;
reshape_liveness) reshape_liveness || rc=1 ;;
bind) bind_check || rc=1 ;;
all)
    safety || rc=1
    gc_check || rc=1
    mutants || rc=1
    fo_mutants || rc=1
    liveness || rc=1
    liveness_i32 || rc=1
    failover || rc=1
    failover_liveness || rc=1
    ssp || rc=1
    ssp_liveness || rc=1
    reshape || rc=1
    reshape_liveness || rc=1
    bind_check || rc=1
    ;;
*) echo "usage: $0 BUILD_DIR [safety|liveness|liveness_i32|gc|mutants|failover|failover_liveness|ssp|ssp_liveness|reshape|reshape_liveness|bind|all]" >&2
   exit 2 ;;
esac
exit $rc
