#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Checks the Wireshark dissector (tools/wireshark/ina.lua) against the C
# header decoder: for each golden capture, the header fields tshark prints
# with the dissector must equal, line for line, what tests/tools/pcap_fields
# prints, and tshark must report no malformed packet and no Lua error. The
# goldens carry f32 and i32, sub-blocks in f32-sub; a bf16 DATA packet and an f32 DATA with
# sub-blocks (docs/PROTOCOL.md 2.7) made here with text2pcap (which comes
# with tshark) go through the same checks, and their trees must name the
# encoding, the mask and what it names, and show the values. Sub-block
# packets with a bad mask and with a short payload must get the same fields
# from both and the dissector's expert info.
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
        block next block_size sub_log sub_elems n_elems exp status bound
        sub.mask sub.present sub.present_elems token)
eargs=()
for f in "${fields[@]}"; do eargs+=(-e "ina.$f"); done

# Made here, one frame each, in made.pcap:
# 1. DATA, encoding 3 (bf16), job 7, epoch 1, tensor_len 3, block 0, next
#    END, B 4, 3 elements: 1, -2.5, +inf, 2 bytes each (docs/PROTOCOL.md 2.4)
# 2. DATA, f32, job 7, epoch 1, tensor_len 20, block 0, next END, block_size
#    0x4010: B 16 in 4 sub-blocks of b 4, 16 elements; the mask 0x05 names
#    sub-blocks 0 and 2, whose 8 values follow: 1 2 3 4, -5 -6 -7 -8 (2.7)
# 3. the same with a bit past the block's 4 sub-blocks (bit 5): a bad mask
# 4. the same with a payload 4 bytes short
# 5. 2 as a PARTIAL RESULT (flags 0x21, rank 0xffff), the 8-byte contributor
#    bitmap 0b1011 after the present sub-blocks
bf16_hdr="02 03 03 00 00 00 00 07 00 00 00 01 00 00 00 00 00 00 00 00 00 00 00 00
          00 00 00 03 00 00 00 00 ff ff ff ff 00 04 00 03 00 00 00 00 00 00 00 00
          01 02 03 04 05 06 07 08"
sub_hdr="02 03 01 00 00 00 00 07 00 00 00 01 00 00 00 00 00 00 00 00 00 00 00 00
         00 00 00 14 00 00 00 00 ff ff ff ff 40 10 00 10 00 00 00 00 00 00 00 00
         01 02 03 04 05 06 07 08"
res_hdr="02 04 01 21 00 00 00 07 00 00 00 01 ff ff 00 00 00 00 00 00 00 00 00 00
         00 00 00 14 00 00 00 00 ff ff ff ff 40 10 00 10 00 00 00 00 00 00 00 00
         01 02 03 04 05 06 07 08"
sub_vals="3f 80 00 00 40 00 00 00 40 40 00 00 40 80 00 00
          c0 a0 00 00 c0 c0 00 00 c0 e0 00 00 c1 00 00 00"
{
    echo "0000 $(echo $bf16_hdr) 3f 80 c0 20 7f 80"
    echo "0000 $(echo $sub_hdr) 05 00 00 00 $(echo $sub_vals)"
    echo "0000 $(echo $sub_hdr) 21 00 00 00 $(echo $sub_vals)"
    echo "0000 $(echo $sub_hdr) 05 00 00 00 $(echo $sub_vals | cut -d' ' -f1-28)"
    echo "0000 $(echo $res_hdr) 05 00 00 00 $(echo $sub_vals) 00 00 00 00 00 00 00 0b"
} >"$tmp/made.txt"
if ! command -v text2pcap >/dev/null 2>&1; then
    echo "text2pcap not installed (it comes with tshark): skipped"
    exit 77
fi
text2pcap -q -u 9150,9150 -4 10.77.0.1,10.77.0.2 "$tmp/made.txt" "$tmp/made.pcap" >/dev/null 2>&1

pass=0 fail=0
for pcap in "$here"/*.pcap "$tmp/made.pcap"; do
    name=$(basename "$pcap" .pcap)
    # the goldens are not on the default port 9150: use the capture's
    # busiest UDP port
    port=9150
    [ "$name" = made ] || port=$(tshark -r "$pcap" -T fields -e udp.srcport -e udp.dstport \
        2>/dev/null | tr '\t' '\n' | grep -v '^$' | sort | uniq -c | sort -rn |
        awk 'NR == 1 { print $2 }')
    port=${port:-9150}
    ts=(tshark -X "lua_script:$lua" -o "ina.udp_port:$port" -r "$pcap")

    # token: 0x and 16 lower-case hex digits, whatever padding tshark uses
    "${ts[@]}" -T fields -E separator=/t "${eargs[@]}" 2>"$tmp/$name.err" |
        awk -F '\t' 'BEGIN { OFS = "\t" }
            { t = tolower($NF); sub(/^0x/, "", t)
              while (length(t) < 16) t = "0" t
              $NF = "0x" t; print }' >"$tmp/$name.tshark"
    "$fields_bin" "$pcap" >"$tmp/$name.c"
    { "${ts[@]}" -V 2>&1; cat "$tmp/$name.err"; } >"$tmp/$name.v"

    ok=1
    if [ ! -s "$tmp/$name.c" ]; then
        echo "$name: pcap_fields printed nothing"; ok=0
    elif ! diff -u "$tmp/$name.c" "$tmp/$name.tshark" >"$tmp/$name.diff"; then
        echo "$name: dissector fields differ from pcap_fields (- C, + tshark):"
        head -n 40 "$tmp/$name.diff"; ok=0
    fi
    # the made bad mask is an expert of the group Malformed, wanted there
    grep -E 'Malformed|Lua Error' "$tmp/$name.v" |
        { [ "$name" = made ] && grep -v -E 'Bad sub-blocks|\[Group: Malformed\]' || cat; } >"$tmp/$name.bad" || true
    if [ -s "$tmp/$name.bad" ]; then
        echo "$name: tshark reports $(wc -l <"$tmp/$name.bad") malformed packet(s) or Lua error(s):"
        head -n 10 "$tmp/$name.bad"
        ok=0
    fi
    if [ $ok = 1 ]; then
        pass=$((pass + 1))
        echo "ok: $name ($(wc -l <"$tmp/$name.c") frames, port $port)"
    else
        fail=$((fail + 1))
    fi
done

# the made packets' trees, one file a frame
awk -v d="$tmp" '/^Frame [0-9]+:/ { n++ } n { print > (d "/frame" n ".v") }' "$tmp/made.v"
# want FRAME TEXT...: frame FRAME's tree has each TEXT
want() {
    local fr=$1 w
    shift
    for w in "$@"; do
        if ! grep -qF -- "$w" "$tmp/frame$fr.v" 2>/dev/null; then
            echo "made frame $fr: tshark -V lacks '$w'"; fail=$((fail + 1))
        fi
    done
}
# unwanted FRAME REGEX: frame FRAME's tree has nothing REGEX matches
unwanted() {
    if grep -q -E -- "$2" "$tmp/frame$1.v" 2>/dev/null; then
        echo "made frame $1: tshark -V has '$(grep -E -- "$2" "$tmp/frame$1.v" | head -n 1)'"
        fail=$((fail + 1))
    fi
}
# bf16: the encoding's name, 2-byte values, no size expert
want 1 'Encoding: bf16 (3)' 'Values: 3 bf16' 'Value: 1 (bf16 0x3f80)' \
    'Value: -2.5 (bf16 0xc020)' 'Value: inf (bf16 0x7f80)'
unwanted 1 'Payload size disagrees'
# sub-blocks: B, sub_log and b apart, the mask and what it names, each
# present sub-block with its values; no expert on the right one
want 2 'Block size B: 16' 'Sub-blocks log2 (sub_log): 2' '[Sub-block size b: 4]' \
    'Presence mask: 05000000 (2 of 4 sub-blocks of 4)' '[Present sub-blocks: 2]' \
    '[Present elements: 8]' 'Sub-block 0: elements 0..3, 4 f32' \
    'Sub-block 2: elements 8..11, 4 f32' 'Value: -5'
unwanted 2 'Expert Info'
# the bad mask: its expert, and no counts; the short one: the size expert
want 3 'Bad sub-blocks'
unwanted 3 'Present sub-blocks'
want 4 'Payload size disagrees'
unwanted 4 'Bad sub-blocks'
want 5 'Type: result (4)' 'Rank: 65535 (switch)' 'Partial (ssp, contributors follow): True' \
    '[Present elements: 8]' 'Sub-block 2: elements 8..11, 4 f32'
unwanted 5 'Expert Info'
echo "$pass passed, $fail failed"
[ "$fail" = 0 ] && [ "$pass" -gt 0 ]
