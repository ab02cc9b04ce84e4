# SPDX-License-Identifier: MIT
# Shell functions the tests of ina-switch --metrics share (sourced, not run):
# a free TCP port, a scrape with curl, a metric's value, and the check that
# a text is Prometheus exposition format 0.0.4. The caller sets 'tmp' and
# 'url' (http://127.0.0.1:PORT) and defines fail MESSAGE (exits).
# check_parser needs python3-prometheus-client (scripts/deps).

# free_tcp_port: a TCP port nothing listens on, from 19100-19599.
free_tcp_port() {
    local p
    for ((p = 19100 + $$ % 400; p < 19600; p++)); do
        if [ -z "$(ss -Htln "sport = :$p" 2>/dev/null)" ]; then echo "$p"; return 0; fi
    done
    return 1
}

# scrape FILE: GET $url/metrics into FILE (headers in $tmp/headers); fails
# unless 200 with the format's content type.
scrape() {
    local code
    code=$(curl -s -m 5 -D "$tmp/headers" -o "$1" -w '%{http_code}' "$url/metrics") || true
    [ "$code" = 200 ] || fail "GET $url/metrics: ${code:-no answer}"
    grep -qi '^content-type: text/plain; version=0.0.4' "$tmp/headers" ||
        fail "content type: $(cat "$tmp/headers")"
}

# metric SERIES [FILE]: the value of SERIES (written whole, labels in order)
# in FILE (default $m), or "none".
metric() {
    awk -v s="$1" '$1 == s { print $2; found = 1 } END { if (!found) print "none" }' "${2:-$m}"
}

# sum_metric REGEX [FILE]: the sum of the series whose whole name{labels}
# matches REGEX.
sum_metric() {
    awk -v re="^$1\$" '$1 !~ /^#/ && $1 ~ re { s += $2 } END { print s + 0 }' "${2:-$m}"
}

# check_format FILE: every line as format 0.0.4 says: "# HELP name text" then
# "# TYPE name counter|gauge" once per family, then samples of that family,
# "name{label="value",...} number" with label values quoted and escaped,
# counters named *_total, no series twice, at least 50 samples.
check_format() {
    awk '
    function fail(why) { printf "line %d: %s: %s\n", NR, why, $0; bad = 1; exit 1 }
    /^# HELP / { if ($3 in seen) fail("family repeated"); fam = $3; seen[fam] = 1; want_type = 1; next }
    /^# TYPE / { if (!want_type || $3 != fam) fail("TYPE without its HELP");
                 if ($4 != "counter" && $4 != "gauge") fail("type");
                 if ($4 == "counter" && fam !~ /_total$/) fail("counter not named _total");
                 want_type = 0; next }
    /^#/ { fail("comment") }
    {
        if (want_type) fail("sample before TYPE")
        if ($0 !~ /^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*"(,[a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*")*\})? -?[0-9]+(\.[0-9]+)?$/)
            fail("not name{labels} value")
        name = $0; sub(/[{ ].*/, "", name)
        if (name != fam) fail("sample of another family")
        series = $0; sub(/ [^ ]*$/, "", series)
        if (series in dup) fail("series twice"); dup[series] = 1; n++
    }
    END { if (!bad && n < 50) { print "only " n " samples"; exit 1 } }' "$1"
}

# check_parser FILE: the Prometheus project's own parser (prom_parse.py,
# python3-prometheus-client) reads FILE, every family typed, as many samples
# as check_format counted; and where Prometheus is installed, promtool lints
# it as Prometheus reads it.
check_parser() {
    local n ours
    /usr/bin/python3 -c 'import prometheus_client' 2>/dev/null ||
        fail "python3-prometheus-client is missing (scripts/deps installs it)"
    n=$(/usr/bin/python3 "$(dirname "${BASH_SOURCE[0]}")/prom_parse.py" "$1" | wc -l) ||
        fail "prometheus_client does not read $1"
    ours=$(grep -vc '^#' "$1")
    [ "$n" -eq "$ours" ] || fail "prometheus_client read $n samples, the text has $ours"
    echo "prometheus_client reads $n samples"
    if command -v promtool >/dev/null; then
        promtool check metrics <"$1" || fail "promtool check metrics"
        echo "promtool check metrics: ok"
    fi
}
