#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The .deb (ctest label install): cpack -G DEB from the build directory into a
# scratch directory, then, without installing it on this machine:
# dpkg-deb -I says package ina, the header's version, this architecture,
# Depends on the libraries it links (DPDK, libpcap, libxxhash, libsodium, libc; and the
# package of every NEEDED library of its programs and libina.so), shlibs
# for libina.so.MAJOR, /etc/default/ina-switch a conffile, the ldconfig
# trigger; dpkg-deb -c lists the library and its links, libina.a, ina.h,
# ina.pc, the CMake package, the unit, the options file, the digits and a man
# page for every program in usr/bin. Then the package's files, unpacked into
# the scratch directory, are used as installed: its ina.pc (prefix /usr, read
# through PKG_CONFIG_SYSROOT_DIR) builds tests/install/consumer.c, which runs
# on the package's libina.so against the package's ina-switch on 127.0.0.1.
# Usage: deb.sh BUILD_DIR SOURCE_DIR UDP_PORT [SANITIZERS]   (the build's INA_SANITIZE)
set -euo pipefail
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd) port=$3
# A sanitized libina needs its runtime first: the consumer is built with it.
san=()
[ -n "${4:-}" ] && san=(-fsanitize="$4")
tmp=$(mktemp -d)
sw=""
cleanup() {
    if [ -n "$sw" ]; then kill "$sw" 2>/dev/null || true; wait "$sw" 2>/dev/null || true; fi
    rm -rf "$tmp"
}
trap cleanup EXIT
pass=0 fail=0
ok() { echo "ok: $*"; pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

command -v dpkg-shlibdeps > /dev/null || { echo "FAIL: dpkg-shlibdeps missing (dpkg-dev; scripts/deps)"; exit 1; }
ver=$(sed -n 's/^#define INA_VERSION_STRING[ \t]*"\(.*\)"/\1/p' "$src/host/include/ina.h")
major=${ver%%.*}
arch=$(dpkg --print-architecture)
multi=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
if ! (cd "$tmp" && cpack --config "$build/CPackConfig.cmake" -G DEB -B "$tmp/out" > "$tmp/cpack.log" 2>&1); then
    echo "FAIL: cpack -G DEB:"; cat "$tmp/cpack.log"; exit 1
fi
deb=$tmp/out/ina_${ver}_${arch}.deb
[ -f "$deb" ] || { echo "FAIL: no $(basename "$deb") in:"; ls "$tmp/out"; cat "$tmp/cpack.log"; exit 1; }
ok "cpack -G DEB: $(basename "$deb"), $(stat -c %s "$deb") bytes"

# dpkg-deb -I: the control fields and files.
dpkg-deb -I "$deb" > "$tmp/info"
field() { dpkg-deb -f "$deb" "$1"; }
[ "$(field Package)" = ina ] && [ "$(field Version)" = "$ver" ] && [ "$(field Architecture)" = "$arch" ] &&
    ok "Package ina, Version $ver (ina.h), Architecture $arch" ||
    bad "control: Package '$(field Package)' Version '$(field Version)' Architecture '$(field Architecture)'"
deps=$(field Depends)
miss=""
for d in libc6 libpcap0.8 libxxhash0 libsodium23 librte-eal librte-ethdev librte-mbuf librte-mempool; do
    grep -q "\b$d" <<< "$deps" || miss+=" $d"
done
[ -z "$miss" ] && ok "Depends: $deps" || bad "Depends lacks$miss: '$deps'"
mkdir "$tmp/ctrl"
dpkg-deb --ctrl-tarfile "$deb" | tar -x -C "$tmp/ctrl"
grep -qx "libina $major ina (>= $ver)" "$tmp/ctrl/shlibs" && ok "shlibs: $(cat "$tmp/ctrl/shlibs")" ||
    bad "shlibs: '$(cat "$tmp/ctrl/shlibs" 2>/dev/null)'"
grep -qx /etc/default/ina-switch "$tmp/ctrl/conffiles" && ok "conffiles: /etc/default/ina-switch" ||
    bad "conffiles: '$(cat "$tmp/ctrl/conffiles" 2>/dev/null)'"
grep -qx "activate-noawait ldconfig" "$tmp/ctrl/triggers" && ok "triggers: ldconfig" ||
    bad "triggers: '$(cat "$tmp/ctrl/triggers" 2>/dev/null)'"

# dpkg-deb -c: the files.
dpkg-deb -c "$deb" | awk '{ print $6 }' | sed 's|^\./|/|' > "$tmp/files"
lib=/usr/lib/$multi
miss=""
for f in /usr/bin/ina-switch /usr/bin/ina-host /usr/bin/ina-train "$lib/libina.so.$ver" \
         "$lib/libina.so.$major" "$lib/libina.so" "$lib/libina.a" /usr/include/ina.h \
         "$lib/pkgconfig/ina.pc" "$lib/cmake/ina/ina-config.cmake" \
         "$lib/cmake/ina/ina-config-version.cmake" "$lib/cmake/ina/ina-targets.cmake" \
         /usr/lib/systemd/system/ina-switch.service /etc/default/ina-switch \
         /usr/share/ina/digits.csv.gz /usr/share/doc/ina/copyright; do
    grep -qx "$f" "$tmp/files" || miss+=" $f"
done
for b in $(grep '^/usr/bin/.' "$tmp/files"); do
    grep -qx "/usr/share/man/man1/$(basename "$b").1.gz" "$tmp/files" || miss+=" man1/$(basename "$b").1.gz"
done
[ -z "$miss" ] && ok "files: $(grep -c '[^/]$' "$tmp/files") (library, header, ina.pc, cmake/ina, unit, man pages: $(grep -c '/man1/.' "$tmp/files"))" ||
    bad "not in the package:$miss"

# The package's files used as installed, from a scratch root.
root=$tmp/root
dpkg-deb -x "$deb" "$root"
# Every library a program or libina.so needs (NEEDED) comes from a package
# that Depends names, so that apt-get install pulls it on a fresh machine.
miss=""
n_needed=0
ldconfig -p > "$tmp/ldcache"
# The package of each library: its path in the ld cache (this architecture's
# copy, its multiarch directory, before any other), then its real path's
# owner, else the cache path's, asked of dpkg in one query for every
# library (a query takes about a second, whatever it asks).
declare -A path_of=() real_of=() owner=()
needed=()
for f in "$root"/usr/bin/* "$root$lib"/libina.so.*.*; do
    for so in $(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\].*/\1/p'); do
        [ "$so" = "libina.so.$major" ] && continue
        needed+=("$(basename "$f") $so")
        [ -n "${path_of[$so]+set}" ] && continue
        path_of[$so]=$(awk -v so="$so" -v m="/$multi/" '$1 == so && index($NF, m) && !p { p = $NF }
                 $1 == so && !q { q = $NF } END { print p ? p : q }' "$tmp/ldcache")
        real_of[$so]=""
        [ -n "${path_of[$so]}" ] && real_of[$so]=$(readlink -f "${path_of[$so]}")
    done
done
paths=()
for so in "${!path_of[@]}"; do
    [ -n "${path_of[$so]}" ] && paths+=("${real_of[$so]}" "${path_of[$so]}")
done
# "PACKAGE[:ARCH][, ...]: PATH" for each path dpkg knows (an error for the others)
while IFS= read -r line; do
    if [ -z "${owner[${line##*: }]+set}" ]; then owner[${line##*: }]=${line%%:*}; fi
done < <([ ${#paths[@]} = 0 ] || dpkg -S "${paths[@]}" 2>/dev/null || true)
n_needed=${#needed[@]}
for e in "${needed[@]}"; do
    so=${e#* }
    pkg=""
    if [ -n "${path_of[$so]}" ]; then
        pkg=${owner[${real_of[$so]}]:-${owner[${path_of[$so]}]:-}}
    fi
    if [ -z "$pkg" ] || ! grep -qE "(^|, )$pkg( |,|\$)" <<< "$deps"; then
        miss+=" ${e% *}:$so(${pkg:-no package})"
    fi
done
[ -z "$miss" ] && [ "$n_needed" -gt 0 ] &&
    ok "every NEEDED library ($n_needed entries) comes from a package in Depends" ||
    bad "NEEDED libraries whose package Depends does not name:$miss"
grep -q '^prefix=/usr$' "$root$lib/pkgconfig/ina.pc" &&
    grep -q '^ExecStart=/usr/bin/ina-switch ' "$root/usr/lib/systemd/system/ina-switch.service" &&
    grep -q '^EnvironmentFile=-/etc/default/ina-switch$' "$root/usr/lib/systemd/system/ina-switch.service" &&
    ok "ina.pc prefix /usr; the unit runs /usr/bin/ina-switch with /etc/default/ina-switch" ||
    bad "ina.pc or the unit name other paths"
gzip -dc "$root/usr/share/man/man1/ina-switch.1.gz" | grep -q -F -- '\-\-listen' &&
    ok "man page ina-switch(1) holds its options" || bad "man page ina-switch(1) lacks --listen"
cp "$src/tests/install/consumer.c" "$tmp/"
flags=$(PKG_CONFIG_PATH= PKG_CONFIG_LIBDIR="$root$lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$root" \
        pkg-config --cflags --libs ina)
if cc "${san[@]}" -std=c11 -Wall -Werror -o "$tmp/consumer" "$tmp/consumer.c" $flags 2> "$tmp/cc.log"; then
    ok "the package's ina.pc builds consumer.c: $flags"
else
    bad "consumer.c with the package's ina.pc ($flags):"; cat "$tmp/cc.log"
fi
export LD_LIBRARY_PATH=$root$lib INA_JOB_TOKEN="deb-test-$port"
"$root/usr/bin/ina-switch" --listen "127.0.0.1:$port" > "$tmp/switch.log" 2>&1 &
sw=$!
for ((i = 0; i < 100; i++)); do
    grep -q serving "$tmp/switch.log" && break
    kill -0 "$sw" 2>/dev/null || break
    sleep 0.1
done
if [ -x "$tmp/consumer" ] && grep -q serving "$tmp/switch.log" &&
   timeout 30 "$tmp/consumer" "127.0.0.1:$port" 0 1 30 > "$tmp/c.log" 2>&1 &&
   [ "$(ldd "$tmp/consumer" | awk '/libina\.so/ { print $3 }')" = "$root$lib/libina.so.$major" ]; then
    ok "$(cat "$tmp/c.log") on the package's libina.so.$major and ina-switch"
else
    bad "the consumer on the package's library and switch:"; cat "$tmp/switch.log" "$tmp/c.log" 2>/dev/null
fi
kill "$sw"; wait "$sw" 2>/dev/null || true; sw=""

echo "$pass passed, $fail failed: the .deb"
[ $fail = 0 ]
