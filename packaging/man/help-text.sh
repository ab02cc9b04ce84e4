#!/bin/sh
# SPDX-License-Identifier: MIT
# What help2man reads of an ina program (packaging/CMakeLists.txt): its output
# for the given option, with the programs' usage block in the form help2man
# makes its SYNOPSIS from: "Usage: PROG ...", then "  or:  PROG ..." for each
# other form; a deeply indented line continues the form before it. And a
# blank line before the first option line of a list that follows text
# directly (ina-sim), which help2man needs to see the list.
# Usage: help-text.sh PROGRAM OPTION
set -e
prog=$(basename "$1")
"$1" "$2" | awk -v prog="$prog" '
NR == 1 && /^usage:/ { sub(/^usage:[ \t]*/, "Usage: "); cur = $0; block = 1; next }
block {
	line = $0
	match(line, /^[ \t]*/)
	indent = RLENGTH
	sub(/^[ \t]+/, "", line)
	if (line != "" && index(line, prog) == 1) { print cur; cur = "  or:  " line; next }
	if (line != "" && indent >= 8) { cur = cur " " line; next }
	print cur; block = 0
}
/^(  | )?-/ && prev != "" && prev !~ /^(  | )?-/ && prev !~ /^        / && prev !~ /:$/ { print "" }
{ print; prev = $0 }
END { if (block) print cur }'
