#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# libina.so exports exactly the INA_API functions of ina.h: every defined
# dynamic symbol of the shared object must be declared INA_API in the header
# (nothing internal leaks: the library is built with -fvisibility=hidden), and
# every function the header declares INA_API must be there (a declared
# function that nobody implemented, or that the link dropped, fails here, not
# in a user's link). Also checks the SONAME: libina.so.<INA_VERSION_MAJOR>.
# Usage: test_exports.sh LIBINA_SO INA_H
set -euo pipefail
so=$1
hdr=$2
[ -f "$so" ] || { echo "FAIL: no shared object at $so"; exit 1; }
[ -f "$hdr" ] || { echo "FAIL: no header at $hdr"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Declared: each line starting with INA_API names its function just before
# the first '(' (the return type and the name are on that line).
sed -n 's/^INA_API[^(]*[^A-Za-z0-9_(]\([A-Za-z_][A-Za-z0-9_]*\)[[:space:]]*(.*/\1/p' "$hdr" |
    sort -u > "$tmp/declared"
# Exported: defined symbols of the dynamic symbol table, of any kind.
nm -D --defined-only "$so" | awk 'NF >= 3 { print $3 }' | sed 's/@.*//' | sort -u > "$tmp/exported"

n_decl=$(wc -l < "$tmp/declared")
if [ "$n_decl" -lt 10 ]; then
    echo "FAIL: only $n_decl INA_API declarations read from $hdr (the parser is wrong?)"
    exit 1
fi
# Every use of INA_API but the macro's own definition must be a declaration
# this parser (and cmake/InaExports.cmake's, the same rule) reads: one that
# is not would be missing from both the export list and this check.
n_uses=$(grep -v '^#define INA_API' "$hdr" | grep -c 'INA_API' || true)
n_lines=$(grep -c '^INA_API[^(]*[^A-Za-z0-9_(][A-Za-z_][A-Za-z0-9_]*[[:space:]]*(' "$hdr" || true)
if [ "$n_uses" != "$n_lines" ] || [ "$n_lines" != "$n_decl" ]; then
    echo "FAIL: $n_uses uses of INA_API in $hdr, $n_lines of them declarations of the form"
    echo "      'INA_API type name(' on one line, $n_decl distinct names: write each as one"
    grep -n 'INA_API' "$hdr" | grep -v ':#define INA_API' |
        grep -v ':INA_API[^(]*[^A-Za-z0-9_(][A-Za-z_][A-Za-z0-9_]*[[:space:]]*(' | sed 's/^/  /'
    exit 1
fi
fail=0
extra=$(comm -13 "$tmp/declared" "$tmp/exported")
missing=$(comm -23 "$tmp/declared" "$tmp/exported")
if [ -n "$extra" ]; then
    echo "FAIL: exported by $(basename "$so") but not declared INA_API in ina.h:"
    echo "$extra" | sed 's/^/  /'
    fail=1
fi
if [ -n "$missing" ]; then
    echo "FAIL: declared INA_API in ina.h but not exported by $(basename "$so"):"
    echo "$missing" | sed 's/^/  /'
    fail=1
fi
major=$(sed -n 's/^#define INA_VERSION_MAJOR[[:space:]]*\([0-9]*\).*/\1/p' "$hdr")
soname=$(readelf -d "$so" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
if [ "$soname" != "libina.so.$major" ]; then
    echo "FAIL: SONAME '$soname', expected libina.so.$major (INA_VERSION_MAJOR)"
    fail=1
fi
[ $fail = 0 ] || exit 1
echo "OK: $(basename "$so") ($soname) exports the $n_decl INA_API functions of ina.h and nothing else"
