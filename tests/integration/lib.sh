# SPDX-License-Identifier: MIT
# Shell functions every integration test shares (sourced, not run): a scratch
# directory and the cleanup of what the test started, whatever way it ends,
# and starting a switch and waiting until it serves (its "serving" line, so
# the switch must log at info, its default) instead of sleeping. The caller
# sets 'build' (the build directory) before starting a switch. And tenant
# mode for a test's switches and workers (tenant_mode), and a bounded wait
# for a process (wait_for).

# lib_init: $tmp a scratch directory, pids=() the processes to stop at exit
# (SIGTERM, SIGKILL after 5 s), then lib_at_exit if the caller defined it
# (what else it must remove), then $tmp removed; at exit, also on INT and
# TERM (exit status 130).
lib_init() {
    tmp=$(mktemp -d)
    pids=()
    trap lib_cleanup EXIT
    trap 'exit 130' INT TERM
}

lib_cleanup() {
    local p i alive
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for ((i = 0; i < 50; i++)); do
        alive=0
        for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
        [ $alive = 0 ] && break
        sleep 0.1
    done
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if declare -F lib_at_exit >/dev/null; then lib_at_exit || true; fi
    rm -rf "$tmp"
}

# wait_for PID SECONDS: waits for PID (a child of the caller) to exit, polling
# every 0.1 s; its exit status, or it is killed after SECONDS (status 137).
wait_for() {
    local rc=0
    timeout "$2" tail -s 0.1 --pid="$1" -f /dev/null || { kill -9 "$1" 2>/dev/null || true; }
    wait "$1" || rc=$?
    return $rc
}

# wait_serving PID [LOG]: waits up to 20 s for the switch's "serving" line in
# LOG (default $tmp/switch.log); exits 1 with the log if the switch died or
# never got there.
wait_serving() {
    local i log=${2:-$tmp/switch.log}
    for ((i = 0; i < 400; i++)); do
        grep -q "serving" "$log" 2>/dev/null && return 0
        kill -0 "$1" 2>/dev/null || break
        sleep 0.05
    done
    echo "the switch did not start serving (log $log):"; cat "$log"; exit 1
}

# start_switch LOG ARGS...: ina-switch ARGS in the background, its output in
# LOG (a new file for each switch: its serving line is what is waited
# for), stopped at exit; returns once it serves, its pid in $sw.
start_switch() {
    local log=$1
    shift
    "$build/switch_sim/ina-switch" "$@" >"$log" 2>&1 &
    sw=$!
    pids+=("$sw")
    wait_serving "$sw" "$log"
}

# tenant_mode SLOTS: tenant carol (index 3, a fresh key, 4 jobs, SLOTS slots)
# in $tmp/tenants.yaml (mode 600); tenant_opts=(--tenants FILE) for every
# switch; the workers' INA_TENANT and INA_TENANT_KEY exported and any
# INA_JOB_TOKEN unset, so that they run as carol's.
tenant_mode() {
    unset INA_JOB_TOKEN
    export INA_TENANT=3 INA_TENANT_KEY
    INA_TENANT_KEY=$(head -c 32 /dev/urandom | base64)
    printf 'tenants:\n  - {name: carol, index: 3, key: %s, jobs: 4, slots: %s, max_weight: 1}\n' \
        "$INA_TENANT_KEY" "$1" >"$tmp/tenants.yaml"
    chmod 600 "$tmp/tenants.yaml"
    tenant_opts=(--tenants "$tmp/tenants.yaml")
}
