#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration test: tenant mode (ina-switch --tenants, issue 19) over UDP
# loopback. A bad tenants file and one others may read are refused with the
# line and field, or the fix; then two tenants run their job 5 at once on one
# switch under --share fair (the same job id, two jobs), while a hostile
# sender (tests/tools/hostile.c: wrong tokens, forged DATA, replays, JOIN
# floods, aimed at alice's job) and workers with the wrong key or no tenant
# (token mode) knock: every sum of both jobs exact (ina-host verifies each
# round), the intruders get no answer at all, and the switch counts every
# packet of theirs as a drop: auth_fail, or, checked before the tag and
# cheaper, a malformed header or a rank's DATA from another address.
# Usage: udp_tenants.sh BUILD_DIR UDP_PORT
set -euo pipefail
build=$1 port=$2
host=$build/host/ina-host
count=100
. "$(dirname "$0")/lib.sh"
lib_init
unset INA_JOB_TOKEN INA_TENANT INA_TENANT_KEY
fail=0
key_a=$(head -c 32 /dev/urandom | base64)
key_b=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
tenants=$tmp/tenants.yaml
cat >"$tenants" <<YAML
tenants:
  - name: alice
    index: 1
    key: $key_a
    jobs: 2
    slots: 32
    max_weight: 4
  - name: bob
    index: 2
    key: $key_b
    jobs: 2
    slots: 32
    max_weight: 4
YAML
chmod 600 "$tenants"

# refused NAME PATTERN FILE: ina-switch --tenants FILE exits non-zero at once
# printing PATTERN.
refused() {
    local rc=0
    timeout 10 "$build/switch_sim/ina-switch" --listen "127.0.0.1:$port" --tenants "$3" \
        >"$tmp/$1.log" 2>&1 || rc=$?
    if [ $rc -eq 0 ] || [ $rc -eq 124 ] || ! grep -q "$2" "$tmp/$1.log"; then
        echo "FAIL $1: exit $rc:"; cat "$tmp/$1.log"; fail=1
    else
        echo "ok   $1: $(grep -m1 "$2" "$tmp/$1.log")"
    fi
}
sed 's/index: 2/index: 300/' "$tenants" >"$tmp/bad.yaml"
chmod 600 "$tmp/bad.yaml"
refused bad_index "bad.yaml:9: index: '300' is not a number 1..255" "$tmp/bad.yaml"
cp "$tenants" "$tmp/open.yaml"
chmod 644 "$tmp/open.yaml"
refused readable "chmod 600" "$tmp/open.yaml"
refused missing "no-such.yaml: No such file" "$tmp/no-such.yaml"

start_switch "$tmp/switch.log" --listen "127.0.0.1:$port" --tenants "$tenants" --share fair \
    --slots 64 --max-jobs 16
grep -q "tenant mode: 2 tenants" "$tmp/switch.log" || { echo "no tenant mode line"; fail=1; }
job=(--switch "127.0.0.1:$port" --job 5 --world 2 --elements 20000 --density 0.5 --block 64
     --lanes 8 --rounds 200 --quiet)
hosts=()
for t in 1 2; do
    if [ $t = 1 ]; then k=$key_a; else k=$key_b; fi
    for r in 0 1; do
        INA_TENANT=$t INA_TENANT_KEY=$k timeout 120 "$host" "${job[@]}" --rank $r \
            --report "$tmp/r$t$r.json" >"$tmp/h$t$r.log" 2>&1 &
        hosts+=("$!")
    done
done
pids+=("${hosts[@]}")
sleep 0.3
# Alice's job on the wire is 1 << 24 | 5.
"$build/tests/hostile" "127.0.0.1:$port" $(((1 << 24) | 5)) $count >"$tmp/hostile.log" 2>&1
# Alice's index with bob's key, and a token-mode worker: never answered.
intruder() {
    local rc=0
    timeout 20 env "$@" "$host" --switch "127.0.0.1:$port" --job 5 --world 2 --rank 1 \
        --elements 1000 --rounds 1 --timeout-ms 1500 --quiet >"$tmp/intruder.log" 2>&1 || rc=$?
    if [ $rc -eq 0 ] || [ $rc -eq 124 ] || ! grep -q "did not answer" "$tmp/intruder.log"; then
        echo "FAIL intruder $1: exit $rc:"; cat "$tmp/intruder.log"; fail=1
    else
        echo "ok   intruder $1: exit $rc, no answer"
    fi
}
intruder "INA_TENANT=1" "INA_TENANT_KEY=$key_b"
intruder "INA_JOB_TOKEN=guess"
i=0
for t in 1 2; do
    for r in 0 1; do
        if ! wait "${hosts[$i]}"; then
            echo "tenant $t rank $r failed:"; cat "$tmp/h$t$r.log"; fail=1
        elif [ "$(jq -r .verified "$tmp/r$t$r.json")" != true ]; then
            echo "tenant $t rank $r: not verified"; fail=1
        else
            echo "ok   tenant $t rank $r: 200 rounds verified"
        fi
        i=$((i + 1))
    done
done
kill -0 "$sw" 2>/dev/null || { echo "the switch died"; cat "$tmp/switch.log"; exit 1; }
kill -USR1 "$sw"; sleep 0.3
kill -TERM "$sw"; wait "$sw" || true
v=$(awk '$1 ~ /^drop_/ { n += $2 } END { print n + 0 }' "$tmp/switch.log")
# hostile sends 'count' packets of at least 10 kinds, all without a tag.
if [ "$v" -lt $((10 * count)) ]; then
    echo "drops are $v, want at least $((10 * count))"; fail=1
else
    echo "ok   drops $v"
fi
# Of those, its JOIN flood and its DATA for jobs that do not exist pass the
# cheap checks: their tags fail.
v=$(awk '$1 == "drop_auth_fail" { print $2; exit }' "$tmp/switch.log")
if [ -z "$v" ] || [ "$v" -lt "$count" ]; then
    echo "drop_auth_fail is ${v:-0}, want at least $count"; fail=1
else
    echo "ok   drop_auth_fail $v"
fi
for n in drop_wrong_token jobs_refused; do
    v=$(awk -v n=$n '$1 == n { print $2; exit }' "$tmp/switch.log")
    [ "${v:-0}" = 0 ] || { echo "$n is $v: an unauthenticated packet got past the tag"; fail=1; }
done
[ $fail -eq 0 ] && echo "tenants: both jobs exact, every intruder's packet dropped unanswered"
exit $fail
