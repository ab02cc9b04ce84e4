#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Captures over DPDK: dpdk_memif.sh runs a DPDK switch and WORLD DPDK hosts
# over net_memif with --capture on every process; then tcpdump must read each
# capture with the real addresses (switch 10.77.0.1:9150, host r
# 10.77.0.(r+2)) and no bad checksum, and ina-replay must replay the switch's
# capture twice with identical output and as many results as the live switch.
# Skips (77) like dpdk_memif.sh when DPDK cannot start.
# Usage: dpdk_capture.sh BUILD_DIR [extra ina-host args...]
set -euo pipefail
build=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
world=${WORLD:-2}
. "$(dirname "$0")/lib.sh"
lib_init
command -v tcpdump >/dev/null || { echo "FAIL: tcpdump is not installed (scripts/deps installs it)"; exit 1; }

export CAPTURE_DIR=$tmp WORLD=$world
rc=0
"$here/dpdk_memif.sh" "$build" 0 f32 "$@" >"$tmp/run.log" 2>&1 || rc=$?
[ $rc -eq 77 ] && { cat "$tmp/run.log"; exit 77; }
[ $rc -eq 0 ] || { echo "the job failed:"; cat "$tmp/run.log"; exit 1; }

fail=0
count() { awk -v k="$1" '$1 == k { v = $2 } END { print v + 0 }' "$2"; }
sw=$tmp/switch.pcap
[ -s "$sw" ] || { echo "the switch wrote no capture"; exit 1; }
n=$(tcpdump -r "$sw" -nn 2>/dev/null | grep -c " UDP" || true)
to_sw=$(tcpdump -r "$sw" -nn 2>/dev/null | grep -c "> 10\.77\.0\.1\.9150: UDP" || true)
from_sw=$(tcpdump -r "$sw" -nn 2>/dev/null | grep -c "IP 10\.77\.0\.1\.9150 > 10\.77\.0\.[0-9]*\.9150: UDP" || true)
bad=$(tcpdump -r "$sw" -nn -vv 2>/dev/null | grep -c "bad .*cksum" || true)
echo "switch capture: $n frames, $to_sw to 10.77.0.1:9150, $from_sw from it"
[ "$n" -gt 0 ] && [ $((to_sw + from_sw)) -eq "$n" ] && [ "$to_sw" -gt 0 ] && [ "$from_sw" -gt 0 ] ||
    { echo "switch capture: frames not all between the switch's and the hosts' addresses:";
      tcpdump -r "$sw" -nn 2>/dev/null | head -5; fail=1; }
[ "$bad" = 0 ] || { echo "switch capture: $bad bad checksums"; fail=1; }
for ((r = 0; r < world; r++)); do
    h=$tmp/h$r.pcap ip=10.77.0.$((r + 2))
    n=$(tcpdump -r "$h" -nn 2>/dev/null | grep -c " UDP" || true)
    ok=$(tcpdump -r "$h" -nn 2>/dev/null |
        grep -cE "IP ($ip\.9150 > 10\.77\.0\.1\.9150|10\.77\.0\.1\.9150 > $ip\.9150): UDP" || true)
    [ "$n" -gt 0 ] && [ "$ok" -eq "$n" ] ||
        { echo "host $r capture: $ok of $n frames between $ip and the switch"; fail=1; }
done

"$build/switch_sim/ina-replay" "$sw" >"$tmp/replay1.txt" 2>"$tmp/replay.err"
"$build/switch_sim/ina-replay" "$sw" >"$tmp/replay2.txt" 2>>"$tmp/replay.err"
cmp -s "$tmp/replay1.txt" "$tmp/replay2.txt" || { echo "two replays differ"; fail=1; }
rp=$(count results "$tmp/replay1.txt")
live=$(count results "$tmp/switch.log")
[ "$rp" -gt 0 ] || { echo "replay produced no results"; cat "$tmp/replay.err"; fail=1; }
[ "$rp" = "$live" ] || { echo "replay: $rp results, the live switch $live"; fail=1; }
if [ $fail -ne 0 ]; then
    cat "$tmp/run.log"; exit 1
fi
echo "1 passed, 0 failed: dpdk captures with real addresses, replay gave $rp results as live"
