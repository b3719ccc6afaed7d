"""Summarizes laya-bench runs that meet new request shapes as CSV on stdout:
for each file (one process, `laya-bench --questions N1,N2,... --warmup 0
--runs 1 --format json`), each question count is a request shape the
process had not seen. Its first call runs kernel by kernel (where the
cuda backend times the GEMMs' algorithms of shapes it has not met) and its
second call captures the shape's graph; the CSV gives, per model and
setting, the sum and median of the first calls and the sum of the second
calls over the shapes, less the process's first shape (which also loads
kernels and allocates), and the sum of first calls against the first
setting given for the model (below 1 is faster).

Usage: python3 scripts/gpucheck/first-calls.py 'LABEL=MODEL:FILE' ... > first-calls.csv
(the first LABEL of each MODEL is its base; labels must not contain '=').
"""

import csv
import json
import statistics
import sys

rows, base = [], {}
for arg in sys.argv[1:]:
    label, _, rest = arg.partition("=")
    model, _, path = rest.partition(":")
    results = json.load(open(path))["results"][1:]
    first = [r["first_call_ms"] for r in results]
    second = [r["p50_ms"] for r in results]
    total = sum(first)
    base.setdefault(model, total)
    rows.append([model, label, len(results), "%.0f" % total, "%.0f" % statistics.median(first),
                 "%.0f" % sum(second), "%.2f" % (total / base[model])])
w = csv.writer(sys.stdout, lineterminator="\n")
w.writerow(["model", "setting", "new shapes", "first calls ms", "median first call ms", "second calls ms", "first calls ÷ base"])
w.writerows(rows)
