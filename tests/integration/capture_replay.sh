#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration test of captures: ina-switch --capture serves two ina-host over
# UDP loopback, then ina-replay reads the capture twice; both outputs must be
# identical, hold RESULT lines, match the switch's result count and show no
# drop. If tcpdump is installed it must read the capture too.
# Usage: capture_replay.sh BUILD_DIR UDP_PORT
set -euo pipefail
build=$1 port=$2
. "$(dirname "$0")/lib.sh"
lib_init
export INA_JOB_TOKEN="test-$port"
cap=$tmp/switch.pcap
start_switch "$tmp/switch.log" --listen "127.0.0.1:$port" --capture "$cap"
hosts=()
for r in 0 1; do
    timeout 60 "$build/host/ina-host" --switch "127.0.0.1:$port" --job 9 --rank "$r" \
        --world 2 --elements 20000 --density 0.3 --block 256 --lanes 8 --rounds 2 \
        --quiet --log-level warn --capture "$tmp/h$r.pcap" --report "$tmp/r$r.json" \
        >"$tmp/h$r.log" 2>&1 &
    hosts+=("$!")
done
fail=0
for r in 0 1; do
    if ! wait "${hosts[$r]}"; then
        echo "rank $r failed:"; cat "$tmp/h$r.log"; fail=1
    fi
done
kill -TERM "$sw"; wait "$sw" || true
pids=()
if [ $fail -ne 0 ]; then
    echo "--- switch log"; cat "$tmp/switch.log"; exit 1
fi
[ -s "$cap" ] || { echo "no capture written"; cat "$tmp/switch.log"; exit 1; }

"$build/switch_sim/ina-replay" "$cap" >"$tmp/replay1.txt" 2>"$tmp/replay1.err"
"$build/switch_sim/ina-replay" "$cap" >"$tmp/replay2.txt" 2>"$tmp/replay2.err"
if ! cmp -s "$tmp/replay1.txt" "$tmp/replay2.txt"; then
    echo "two replays of one capture differ:"; diff "$tmp/replay1.txt" "$tmp/replay2.txt" | head -20
    fail=1
fi
nb_lines=$(grep -c '^RESULT ' "$tmp/replay1.txt" || true)
[ "$nb_lines" -gt 0 ] || { echo "replay printed no RESULT line"; fail=1; }
# The replay must reproduce the switch's results exactly, and drop nothing.
# RESULT lines are the results plus the shadow copies sent again.
count() { awk -v k="$1" '$1 == k { v = $2 } END { print v + 0 }' "$2"; }
sw_results=$(count results "$tmp/switch.log")
rp_results=$(count results "$tmp/replay1.txt")
rp_shadow=$(count shadow_replies "$tmp/replay1.txt")
[ "$sw_results" = "$rp_results" ] && [ $((rp_results + rp_shadow)) = "$nb_lines" ] ||
    { echo "results: switch $sw_results, replay $rp_results + $rp_shadow shadow, lines $nb_lines"; fail=1; }
if grep -E '^ +(drop_|skip_)' "$tmp/replay1.txt"; then
    echo "replay dropped or skipped packets"; fail=1
fi
frames=$(count capture_frames "$tmp/switch.log")
rp_frames=$(count capture_frames "$tmp/replay1.txt")
[ "$frames" -gt 0 ] && [ "$frames" = "$rp_frames" ] ||
    { echo "capture frames: switch wrote $frames, replay read $rp_frames"; fail=1; }
# Each host's capture holds every packet it sent and received: those its
# report counts, and the FIN and FIN_ACK after it (no loss here).
for r in 0 1; do
    want=$(jq '.packets_sent + .packets_received + 2' "$tmp/r$r.json")
    got=0
    if command -v tcpdump >/dev/null; then
        got=$(tcpdump -r "$tmp/h$r.pcap" -nn 2>/dev/null | grep -c "UDP" || true)
        bad=$(tcpdump -r "$tmp/h$r.pcap" -nn -vv 2>/dev/null | grep -c "bad .*cksum" || true)
        [ "$bad" = "0" ] || { echo "host $r capture: $bad bad checksums"; fail=1; }
        [ "$got" = "$want" ] || { echo "host $r capture: $got frames, report says $want packets"; fail=1; }
    else
        [ -s "$tmp/h$r.pcap" ] || { echo "host $r wrote no capture"; fail=1; }
    fi
done
if command -v tcpdump >/dev/null; then
    n=$(tcpdump -r "$cap" -nn 2>/dev/null | grep -c "UDP" || true)
    [ "$n" = "$frames" ] || { echo "tcpdump read $n UDP frames of $frames"; fail=1; }
    bad=$(tcpdump -r "$cap" -nn -vv 2>/dev/null | grep -c "bad .*cksum" || true)
    [ "$bad" = "0" ] || { echo "tcpdump found $bad bad checksums"; fail=1; }
else
    echo "tcpdump not installed: not checked"
fi
if [ $fail -ne 0 ]; then
    echo "--- switch log"; cat "$tmp/switch.log"; echo "--- replay"; tail -30 "$tmp/replay1.txt"
    cat "$tmp/replay1.err"
    exit 1
fi
echo "1 passed, 0 failed: $frames frames, $nb_lines results, replays identical"
