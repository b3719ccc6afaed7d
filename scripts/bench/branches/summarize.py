#!/usr/bin/env python3
"""branches.py's JSON lines as the CSV table of BENCHMARKS.md: per
questions and branches, the range of the rounds' ms a forward, and the
median over rounds of that round's ms against the one chain's.

    python3 scripts/bench/branches/summarize.py branches.jsonl > branches.csv
"""
import collections
import csv
import json
import statistics
import sys

ms = collections.defaultdict(dict)  # (questions, branches) -> round -> ms
gpu = ""
with open(sys.argv[1]) as f:
    for line in f:
        r = json.loads(line)
        if "ms" in r:
            ms[(r["questions"], r["branches"])][r["round"]] = r["ms"]
            gpu = r["gpu"]
w = csv.writer(sys.stdout, lineterminator="\n")
w.writerow(["GPU", "questions", "branches", "ms a forward", "against one chain"])


def span(v):
    lo, hi = min(v), max(v)
    return "%.2f" % lo if "%.2f" % lo == "%.2f" % hi else "%.2f–%.2f" % (lo, hi)


for (q, b), rounds in sorted(ms.items()):
    one = ms[(q, 1)]
    ratio = statistics.median(rounds[r] / one[r] for r in rounds if r in one)
    w.writerow([gpu, q, b, span(list(rounds.values())), "%.3f" % ratio])
