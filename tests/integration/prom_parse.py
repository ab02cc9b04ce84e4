#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# Reads a Prometheus text file with the Prometheus project's own parser
# (python3-prometheus-client, text format 0.0.4) and prints one line per
# sample, "name{k="v",...} value" with labels sorted, for the caller to
# compare with its own reading; exits 1 when the parser refuses the text or
# finds a family without a TYPE (it reads those as "unknown").
# Usage: prom_parse.py FILE
import sys

from prometheus_client.parser import text_string_to_metric_families


def main():
    text = open(sys.argv[1], encoding="utf-8").read()
    n = 0
    try:
        for fam in text_string_to_metric_families(text):
            if fam.type not in ("counter", "gauge"):
                print(f"family {fam.name}: type {fam.type}", file=sys.stderr)
                return 1
            if not fam.documentation:
                print(f"family {fam.name}: no HELP", file=sys.stderr)
                return 1
            for s in fam.samples:
                labels = ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()))
                print(f"{s.name}{{{labels}}} {s.value:.17g}")
                n += 1
    except Exception as e:  # the parser's ValueError and friends
        print(f"prometheus_client cannot parse it: {e}", file=sys.stderr)
        return 1
    if n == 0:
        print("no sample", file=sys.stderr)
        return 1
    return 0


sys.exit(main())
