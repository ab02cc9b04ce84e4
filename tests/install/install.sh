#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The installed ina, as a user outside the tree gets it (ctest label install):
# cmake --install into a scratch prefix; the files where GNUInstallDirs puts
# them; tests/install/consumer.c built outside the tree twice, with
# `pkg-config --cflags --libs ina` (PKG_CONFIG_PATH = the prefix's) and with
# a CMake project doing find_package(ina) (CMAKE_PREFIX_PATH = the prefix);
# both linked to the prefix's libina.so.MAJOR, and run as two ranks each
# against the prefix's ina-switch on 127.0.0.1 with LD_LIBRARY_PATH = the
# prefix's libdir; a static link with `pkg-config --static`; and the
# prefix's ina-train reading the digits from the prefix's share/ina.
# Usage: install.sh BUILD_DIR SOURCE_DIR UDP_PORT [SANITIZERS]   (uses UDP_PORT and
# UDP_PORT+1; SANITIZERS: the build's INA_SANITIZE, which the consumer is built with too)
set -euo pipefail
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd) port=$3
# A sanitized libina needs its runtime first: the consumer is built with it.
san=()
[ -n "${4:-}" ] && san=(-fsanitize="$4")
tmp=$(mktemp -d)
prefix=$tmp/prefix
sw=""
cleanup() {
    if [ -n "$sw" ]; then kill "$sw" 2>/dev/null || true; wait "$sw" 2>/dev/null || true; fi
    rm -rf "$tmp"
}
trap cleanup EXIT
pass=0 fail=0
ok() { echo "ok: $*"; pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

cmake --install "$build" --prefix "$prefix" > "$tmp/install.log"
pc=$(find "$prefix" -name ina.pc -path '*/pkgconfig/*')
[ -n "$pc" ] || { echo "FAIL: no ina.pc under $prefix"; cat "$tmp/install.log"; exit 1; }
libdir=$(dirname "$(dirname "$pc")")
ver=$(sed -n 's/^#define INA_VERSION_STRING[ \t]*"\(.*\)"/\1/p' "$src/host/include/ina.h")
major=${ver%%.*}
missing=""
for f in bin/ina-switch bin/ina-host bin/ina-train bin/ina-replay include/ina.h \
         share/ina/digits.csv.gz "${libdir#"$prefix"/}/libina.so.$ver" \
         "${libdir#"$prefix"/}/libina.so.$major" "${libdir#"$prefix"/}/libina.so" \
         "${libdir#"$prefix"/}/libina.a" "${libdir#"$prefix"/}/cmake/ina/ina-config.cmake" \
         "${libdir#"$prefix"/}/cmake/ina/ina-config-version.cmake" \
         lib/systemd/system/ina-switch.service etc/default/ina-switch; do
    [ -e "$prefix/$f" ] || missing+=" $f"
done
if [ -z "$missing" ]; then ok "cmake --install: programs, libina.so.$ver, libina.a, ina.h, ina.pc, cmake/ina, the unit, the digits"
else bad "not installed under $prefix:$missing"; fi
grep -q "^ExecStart=$prefix/bin/ina-switch " "$prefix/lib/systemd/system/ina-switch.service" &&
    grep -q "^prefix=$prefix\$" "$pc" && ok "ina.pc and the unit name the install's prefix" ||
    bad "ina.pc or the unit do not name $prefix: $(grep ^prefix= "$pc"), $(grep ^ExecStart "$prefix/lib/systemd/system/ina-switch.service")"

# The unit as systemd reads it (its program and its man page from the prefix).
if command -v systemd-analyze > /dev/null; then
    # Documentation=man:ina-switch(1) is looked up when man(1) is there.
    man=--man=no
    command -v man > /dev/null && man=--man=yes
    if MANPATH=$prefix/share/man systemd-analyze $man verify \
         "$prefix/lib/systemd/system/ina-switch.service" > "$tmp/verify.log" 2>&1; then
        ok "systemd-analyze verify ina-switch.service"
    else
        bad "systemd-analyze verify ina-switch.service:"; cat "$tmp/verify.log"
    fi
fi

# Outside the tree: a copy of the consumer alone in a scratch directory.
mkdir -p "$tmp/pc" "$tmp/cm"
cp "$src/tests/install/consumer.c" "$src/tests/install/CMakeLists.txt" "$tmp/cm/"
export PKG_CONFIG_PATH=$libdir/pkgconfig
flags=$(pkg-config --cflags --libs ina)
if cc "${san[@]}" -std=c11 -Wall -Werror -o "$tmp/pc/consumer" "$tmp/cm/consumer.c" $flags 2> "$tmp/pc.log"; then
    ok "pkg-config build: cc consumer.c $flags"
else
    bad "pkg-config build ($flags):"; cat "$tmp/pc.log"
fi
if cmake -S "$tmp/cm" -B "$tmp/cm/build" -DCMAKE_PREFIX_PATH="$prefix" \
     -DCMAKE_C_FLAGS="${san[*]}" -DCMAKE_EXE_LINKER_FLAGS="${san[*]}" > "$tmp/cm.log" 2>&1 &&
   cmake --build "$tmp/cm/build" >> "$tmp/cm.log" 2>&1; then
    ok "find_package(ina) build: ina::ina from $prefix"
else
    bad "find_package(ina) build:"; cat "$tmp/cm.log"
fi
# pkg-config --static: libina.a and what it needs, no shared libina.
sflags=$(pkg-config --static --cflags --libs ina | sed 's/-lina /-l:libina.a /')
if cc "${san[@]}" -std=c11 -o "$tmp/pc/consumer-static" "$tmp/cm/consumer.c" $sflags 2> "$tmp/static.log"; then
    if readelf -d "$tmp/pc/consumer-static" | grep -q 'libina\.so'; then
        bad "the static consumer needs libina.so"
    else
        ok "static build: libina.a with pkg-config --static --libs ina"
    fi
else
    bad "static build:"; cat "$tmp/static.log"
fi

export LD_LIBRARY_PATH=$libdir
export INA_JOB_TOKEN="install-test-$port"
for c in "$tmp/pc/consumer" "$tmp/cm/build/consumer"; do
    [ -x "$c" ] || continue
    so=$(ldd "$c" | awk '/libina\.so/ { print $3 }')
    if [ "$so" = "$libdir/libina.so.$major" ]; then ok "$(basename "$(dirname "$c")")/consumer loads $so"
    else bad "$c loads '$so', not $libdir/libina.so.$major"; fi
done

"$prefix/bin/ina-switch" --listen "127.0.0.1:$port" > "$tmp/switch.log" 2>&1 &
sw=$!
for ((i = 0; i < 100; i++)); do
    grep -q serving "$tmp/switch.log" && break
    kill -0 "$sw" 2>/dev/null || break
    sleep 0.1
done
grep -q serving "$tmp/switch.log" || { echo "FAIL: the installed ina-switch did not start:"; cat "$tmp/switch.log"; exit 1; }
job=10
for c in "$tmp/pc/consumer" "$tmp/cm/build/consumer"; do
    [ -x "$c" ] || continue
    job=$((job + 1))
    pids=()
    for r in 0 1; do
        timeout 30 "$c" "127.0.0.1:$port" $r 2 $job > "$tmp/c$r.log" 2>&1 &
        pids+=($!)
    done
    rc=0
    for p in "${pids[@]}"; do wait "$p" || rc=1; done
    if [ $rc = 0 ] && grep -q "OK (libina $ver)" "$tmp/c0.log" && grep -q "OK (libina $ver)" "$tmp/c1.log"; then
        ok "$(basename "$(dirname "$c")")/consumer: 2 ranks, exact sum, through the installed switch"
    else
        bad "$c against the installed switch:"; cat "$tmp/c0.log" "$tmp/c1.log"
    fi
done
if [ -x "$tmp/pc/consumer-static" ]; then
    if timeout 30 "$tmp/pc/consumer-static" "127.0.0.1:$port" 0 1 20 > "$tmp/cs.log" 2>&1; then
        ok "static consumer: 1 rank through the installed switch"
    else
        bad "static consumer:"; cat "$tmp/cs.log"
    fi
fi
kill "$sw"; wait "$sw" 2>/dev/null || true; sw=""

# ina-train as installed: its switch from beside it, its data from share/ina.
if timeout 120 "$prefix/bin/ina-train" --workers 2 --epochs 1 --quiet \
     --switch "127.0.0.1:$((port + 1))" --report "$tmp/train.json" > "$tmp/train.log" 2>&1 &&
   [ "$(jq -r .data "$tmp/train.json")" = "$prefix/share/ina/digits.csv.gz" ]; then
    ok "installed ina-train reads $(jq -r .data "$tmp/train.json"), accuracy $(jq .accuracy "$tmp/train.json")"
else
    bad "installed ina-train:"; cat "$tmp/train.log"; [ -f "$tmp/train.json" ] && jq .data "$tmp/train.json"
fi

echo "$pass passed, $fail failed: ina installed into a scratch prefix"
[ $fail = 0 ]
