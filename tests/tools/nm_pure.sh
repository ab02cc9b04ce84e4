#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A core is pure: its object files reference no clock, no logging and no
# stdio. Lists each object's undefined symbols (nm -u) and fails on any that
# reads a clock (clock_gettime, time, gettimeofday, ...), prints (the printf
# family but the s(n)printf ones that only format into a buffer, puts,
# fwrite, perror, ...), names stderr/stdout, logs (syslog, ina_log*,
# rte_log) or reads the TSC through DPDK. Generic: any core's objects.
# Usage: nm_pure.sh NAME MIN_OBJECTS REGEX OBJECT...
#   checks the OBJECTs whose file name matches REGEX (e.g. '/engine[a-z_]*\.c\.o$'),
#   and fails unless at least MIN_OBJECTS matched (a renamed file must not
#   drop out of the check unseen).
set -euo pipefail
[ $# -ge 4 ] || { echo "usage: $0 NAME MIN_OBJECTS REGEX OBJECT..."; exit 2; }
name=$1 min=$2 regex=$3
shift 3

bad='^(__)?(v?f?printf|v?dprintf|puts|fputs|fputc|putc|putchar|fwrite|perror|fflush)(_chk)?$'
bad+='|^(clock_gettime|clock|time|gettimeofday|timespec_get|ftime|clock_getres)$'
bad+='|^(stderr|stdout|_IO_2_1_stderr_|_IO_2_1_stdout_)$'
bad+='|^(syslog|vsyslog|openlog|__syslog_chk|__vsyslog_chk)$'
bad+='|^ina_log|^rte_log|^rte_vlog|^rte_get_tsc_hz$|^rte_get_timer'

n=0
fail=0
for o in "$@"; do
	[[ $o =~ $regex ]] || continue
	[ -f "$o" ] || { echo "FAIL: $name: no object $o"; exit 1; }
	n=$((n + 1))
	syms=$(nm -u "$o" | awk '{ print $NF }' | sed 's/@.*//' | grep -E "$bad" || true)
	if [ -n "$syms" ]; then
		echo "FAIL: $name: $(basename "$o") references:" $syms
		fail=1
	fi
done
if [ "$n" -lt "$min" ]; then
	echo "FAIL: $name: $n object(s) matched '$regex', expected at least $min"
	exit 1
fi
[ "$fail" -eq 0 ] || exit 1
echo "ok: $name: $n object(s) reference no clock, log or stdio symbol"
