#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Checks the Wireshark dissector (tools/wireshark/ina.lua) against the C
# header decoder: for each golden capture, the header fields tshark prints
# with the dissector must equal, line for line, what tests/tools/pcap_fields
# prints, and tshark must report no malformed packet and no Lua error. The
# goldens carry f32 and i32; a bf16 DATA packet made here with text2pcap
# (which comes with tshark) goes through the same checks, and its tree must
# name the encoding bf16 and show the values.
# Exits 77 (skipped) when tshark is not installed (scripts/deps installs it).
# Usage: tests/pcap/dissector.sh BUILD_DIR
set -euo pipefail
build=$1
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
lua=$src/tools/wireshark/ina.lua
fields_bin=$build/tests/pcap_fields
if ! command -v tshark >/dev/null 2>&1; then
    echo "tshark not installed (scripts/deps installs it): skipped"
    exit 77
fi
[ -x "$fields_bin" ] || { echo "no $fields_bin: build the pcap_fields target"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fields=(version type encoding flags job_id epoch rank lane tensor_id round tensor_len
        block next block_size n_elems exp status bound token)
eargs=()
for f in "${fields[@]}"; do eargs+=(-e "ina.$f"); done

# DATA, encoding 3 (bf16), job 7, epoch 1, tensor_len 3, block 0, next END,
# B 4, 3 elements: 1, -2.5, +inf, 2 bytes each (docs/PROTOCOL.md 2.4)
bf16_hdr="01 03 03 00 00 00 00 07 00 00 00 01 00 00 00 00 00 00 00 00 00 00 00 00
          00 00 00 03 00 00 00 00 ff ff ff ff 00 04 00 03 00 00 00 00 00 00 00 00
          01 02 03 04 05 06 07 08"
echo "0000 $(echo $bf16_hdr) 3f 80 c0 20 7f 80" >"$tmp/bf16.txt"
if ! command -v text2pcap >/dev/null 2>&1; then
    echo "text2pcap not installed (it comes with tshark): skipped"
    exit 77
fi
text2pcap -q -u 9150,9150 -4 10.77.0.1,10.77.0.2 "$tmp/bf16.txt" "$tmp/bf16-data.pcap"

pass=0 fail=0
for pcap in "$here"/*.pcap "$tmp/bf16-data.pcap"; do
    name=$(basename "$pcap" .pcap)
    # the goldens are not on the default port 9150: use the capture's
    # busiest UDP port
    port=$(tshark -r "$pcap" -T fields -e udp.srcport -e udp.dstport 2>/dev/null |
        tr '\t' '\n' | grep -v '^$' | sort | uniq -c | sort -rn | awk 'NR == 1 { print $2 }')
    port=${port:-9150}
    ts=(tshark -X "lua_script:$lua" -o "ina.udp_port:$port" -r "$pcap")

    # token: 0x and 16 lower-case hex digits, whatever padding tshark uses
    "${ts[@]}" -T fields -E separator=/t "${eargs[@]}" 2>"$tmp/$name.err" |
        awk -F '\t' 'BEGIN { OFS = "\t" }
            { t = tolower($NF); sub(/^0x/, "", t)
              while (length(t) < 16) t = "0" t
              $NF = "0x" t; print }' >"$tmp/$name.tshark"
    "$fields_bin" "$pcap" >"$tmp/$name.c"

    ok=1
    if [ ! -s "$tmp/$name.c" ]; then
        echo "$name: pcap_fields printed nothing"; ok=0
    elif ! diff -u "$tmp/$name.c" "$tmp/$name.tshark" >"$tmp/$name.diff"; then
        echo "$name: dissector fields differ from pcap_fields (- C, + tshark):"
        head -n 40 "$tmp/$name.diff"; ok=0
    fi
    bad=$( { "${ts[@]}" -V 2>&1; cat "$tmp/$name.err"; } | grep -c -E 'Malformed|Lua Error' || true)
    if [ "$bad" != 0 ]; then
        echo "$name: tshark reports $bad malformed packet(s) or Lua error(s):"
        { "${ts[@]}" -V 2>&1; cat "$tmp/$name.err"; } | grep -E 'Malformed|Lua Error' | head -n 10
        ok=0
    fi
    if [ $ok = 1 ]; then
        pass=$((pass + 1))
        echo "ok: $name ($(wc -l <"$tmp/$name.c") frames, port $port)"
    else
        fail=$((fail + 1))
    fi
done

# the bf16 packet's tree: the encoding's name, 2-byte values, no size expert
tshark -X "lua_script:$lua" -r "$tmp/bf16-data.pcap" -V >"$tmp/bf16.v" 2>&1
for want in 'Encoding: bf16 (3)' 'Values: 3 bf16' 'Value: 1 (bf16 0x3f80)' \
            'Value: -2.5 (bf16 0xc020)' 'Value: inf (bf16 0x7f80)'; do
    if ! grep -qF "$want" "$tmp/bf16.v"; then
        echo "bf16-data: tshark -V lacks '$want'"; fail=$((fail + 1))
    fi
done
if grep -q 'Payload size disagrees' "$tmp/bf16.v"; then
    echo "bf16-data: payload size expert on a right-sized bf16 payload"; fail=$((fail + 1))
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ] && [ "$pass" -gt 0 ]
