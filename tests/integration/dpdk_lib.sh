# SPDX-License-Identifier: MIT
# Shell functions the DPDK integration tests share (sourced, not run): the
# skip rule, the probe that EAL can start, waiting for the switch and the
# hosts, and the checks on the hosts' reports. The caller sets 'tmp' (its
# scratch directory, holding switch.log, h<r>.log and r<r>.json) and 'fail'.
# Waiting for the switch to serve: wait_serving of lib.sh, sourced here.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# skip REASON: exit 77 (ctest skips), or fail when INA_REQUIRE_DPDK=1 (CI).
skip() {
    if [ "${INA_REQUIRE_DPDK:-0}" = 1 ]; then
        echo "FAIL (INA_REQUIRE_DPDK=1): $*"; exit 1
    fi
    echo "SKIP: $*"; exit 77
}

# probe_eal SWITCH PREFIX EAL_ARGS...: skips unless EAL starts here (one
# process, no multi-process socket).
probe_eal() {
    local sw=$1 prefix=$2 out
    shift 2
    if ! out=$(timeout 30 "$sw" "$@" --no-shconf -l 0 --file-prefix="$prefix" -- --help 2>&1); then
        skip "DPDK cannot start here: $(echo "$out" | grep -m1 'ina-switch:' || echo "$out" | tail -1)"
    fi
}

# wait_hosts PID...: waits for rank 0, 1, ... in turn; a rank that failed
# sets fail=1 and has its log printed.
wait_hosts() {
    local r=0 rc pid
    for pid in "$@"; do
        rc=0
        wait "$pid" || rc=$?
        if [ $rc -ne 0 ]; then
            echo "rank $r failed (exit $rc):"; cat "$tmp/h$r.log"; fail=1
        fi
        r=$((r + 1))
    done
}

# stop_switch PID: SIGUSR1 (a counter snapshot), then SIGTERM (the final
# counters); a non-zero exit, or none within 15 s, sets fail=1.
stop_switch() {
    local rc=0 i
    kill -USR1 "$1"; sleep 0.2; kill -TERM "$1"
    # Bounded: a switch that does not stop within 15 s is killed and fails.
    for ((i = 0; i < 150; i++)); do
        kill -0 "$1" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$1" 2>/dev/null; then
        echo "the switch did not stop 15 s after SIGTERM"; kill -9 "$1"; fail=1
    fi
    wait "$1" || rc=$?
    [ $rc -eq 0 ] || { echo "the switch exited with $rc"; fail=1; }
}

# check_report RANK TRANSPORT: $tmp/rRANK.json exists, verified every round,
# and ran over TRANSPORT.
check_report() {
    local f=$tmp/r$1.json v t
    [ -s "$f" ] || { echo "rank $1 wrote no report"; fail=1; return; }
    v=$(jq -r '.verified' "$f")
    [ "$v" = "true" ] || { echo "rank $1 report says verified=$v"; fail=1; }
    t=$(jq -r '.transport' "$f")
    [ "$t" = "$2" ] || { echo "rank $1 ran on transport '$t', not $2"; fail=1; }
}

# check_same_bits: every worker received the same bits every round.
check_same_bits() {
    local hashes
    hashes=$(jq -s -r '[.[].per_round | map(.sum_hash)] | unique | length' "$tmp"/r*.json)
    [ "$hashes" = "1" ] || { echo "workers received different bits: $hashes distinct result sequences"; fail=1; }
}
