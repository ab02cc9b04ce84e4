#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Regression test: replays a golden capture into the pipeline with ina-replay
# and compares its output with the expected one, line for line. A difference
# means the pipeline now answers the same packets differently.
# Usage: tests/pcap/check.sh BUILD_DIR NAME
set -euo pipefail
build=$1 name=$2
here=$(cd "$(dirname "$0")" && pwd)
got=$(mktemp)
trap 'rm -f "$got"' EXIT
"$build/switch_sim/ina-replay" "$here/$name.pcap" >"$got"
if ! diff -u "$here/$name.expected" "$got"; then
    echo "ina-replay of $name.pcap differs from $name.expected"
    echo "(if the change is meant, run tests/pcap/make-golden.sh BUILD_DIR and review the diff)"
    exit 1
fi
echo "1 passed, 0 failed: $name ($(grep -c '^RESULT' "$got") results replayed)"
