#!/bin/sh
# SPDX-License-Identifier: MIT
# check_pure.sh [-x EXTRA_REGEX] OBJECT_OR_ARCHIVE...
#
# Fails when any of the given object files or static archives references
# (as an undefined symbol, nm -u) a clock, a log or a stdio symbol: the
# check that a core "reads no clock and prints nothing" (docs/ARCHITECTURE.md).
# -x adds an extended regex of more forbidden symbols (anchored as a whole).
# Generic: any library of pure code can be checked with it.
set -eu

forbidden='clock_gettime|clock|time|gettimeofday|timespec_get|rte_get_tsc_hz'
forbidden="$forbidden|(__)?v?f?printf(_chk)?|(__)?v?dprintf(_chk)?|puts|fputs|putchar|putc|fputc|fwrite|perror"
forbidden="$forbidden|stderr|stdout|syslog|vsyslog|openlog|ina_log_.*|ina_die|ina_warn|ina_now_ns"

if [ "${1:-}" = "-x" ]; then
	forbidden="$forbidden|$2"
	shift 2
fi
[ $# -gt 0 ] || { echo "usage: $0 [-x REGEX] OBJECT_OR_ARCHIVE..." >&2; exit 2; }

nm=${NM:-nm}
bad=0
for f in "$@"; do
	[ -r "$f" ] || { echo "check_pure: $f: not readable" >&2; exit 2; }
	# "file.o:" lines name the member; "U sym" lines are the references.
	out=$("$nm" -u "$f" | awk -v file="$f" -v re="^($forbidden)(@.*)?\$" '
		/:$/ { member = substr($0, 1, length($0) - 1); next }
		$1 == "U" && $2 ~ re { print (member != "" ? member : file) ": " $2 }')
	if [ -n "$out" ]; then
		echo "check_pure: $f references forbidden symbols:" >&2
		echo "$out" | sed 's/^/  /' >&2
		bad=1
	fi
done
[ "$bad" -eq 0 ] && echo "check_pure: $# file(s) reference no clock, log or stdio symbol"
exit "$bad"
