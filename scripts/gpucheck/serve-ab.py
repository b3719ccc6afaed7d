#!/usr/bin/env python3
"""laya serve under load, settings against each other: cuda-serve.sh's
serve-load-cuda.csv of several runs (each setting run two or more times,
alternated, in one call) as one CSV, per checkpoint and clients: each
setting's requests a second (the range over its runs), P50 and P99 ms
(ranges), and the median over run pairs of the requests a second against the
first setting's.

    python3 scripts/gpucheck/serve-ab.py 'one dispatcher=w1-a,w1-b' 'two=new-a,new-b' > serve-ab.csv

Each argument is LABEL=DIR[,DIR...], the first the base.
"""
import csv
import os
import statistics
import sys


def load(d):
    with open(os.path.join(d, "serve-load-cuda.csv"), newline="") as f:
        return {(r["checkpoint"], int(r["clients"])): r for r in csv.DictReader(f)}


def span(vals, fmt):
    lo, hi = min(vals), max(vals)
    return fmt % lo if fmt % lo == fmt % hi else (fmt + "–" + fmt) % (lo, hi)


settings = []
for arg in sys.argv[1:]:
    label, dirs = arg.split("=", 1)
    settings.append((label, [load(d) for d in dirs.split(",")]))
base = settings[0][1]
keys = sorted(base[0], key=lambda k: (k[0], k[1]))
header = ["checkpoint", "clients"]
for label, _ in settings:
    header += [label + " req/s", label + " P50 ms", label + " P99 ms"]
for label, _ in settings[1:]:
    header.append(label + " ÷ " + settings[0][0])
w = csv.writer(sys.stdout, lineterminator="\n")
w.writerow(header)
for k in keys:
    row = [k[0], k[1]]
    for _, runs in settings:
        rs = [r[k] for r in runs if k in r]
        row += [span([float(r["req/s"]) for r in rs], "%.0f"), span([float(r["P50 ms"]) for r in rs], "%.0f"),
                span([float(r["P99 ms"]) for r in rs], "%.0f")]
    for _, runs in settings[1:]:
        ratios = [float(a[k]["req/s"]) / float(b[k]["req/s"]) for a, b in zip(runs, base) if k in a and k in b]
        row.append("%.2f" % statistics.median(ratios))
    w.writerow(row)
