#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# No two source files of a library call each other back (issue 16): within
# each static archive given, member A -> member B when A uses a symbol B
# defines; the graph must have no loop (tsort finds one). Prints the edges
# of a loop it finds.
# Usage: test_no_cycles.sh ARCHIVE...
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 ARCHIVE..."; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
for ar in "$@"; do
    [ -f "$ar" ] || { echo "FAIL: no archive at $ar"; exit 1; }
    # "archive:member: ... SYMBOL" lines: what each member defines and uses.
    nm -A --defined-only "$ar" 2>/dev/null |
        awk '$(NF-1) ~ /^[TDBRC]$/ { split($1, p, ":"); print $NF, p[2] }' | sort -u > "$tmp/defs"
    nm -A -u "$ar" 2>/dev/null |
        awk '{ split($1, p, ":"); print $NF, p[2] }' | sort -u > "$tmp/uses"
    join "$tmp/uses" "$tmp/defs" | awk '$2 != $3 { print $2, $3 }' | sort -u > "$tmp/edges"
    n=$(wc -l < "$tmp/edges")
    if ! tsort "$tmp/edges" >/dev/null 2>"$tmp/loop"; then
        echo "FAIL: $(basename "$ar"): its files call each other in a loop:"
        sed -e '/input contains a loop/d' -e 's/^tsort: /  /' "$tmp/loop"
        status=1
    else
        echo "ok: $(basename "$ar"): $n calls between files, no loop"
    fi
done
exit $status
