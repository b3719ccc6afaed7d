"""Summarizes cuda-ab.sh's folder as CSV on stdout: per variant, preset,
precision and question count, the range over rounds of the P50 end to end and
of the P50 GPU time (ms), and the GPU time against the first variant's
(median of rounds; below 1 is faster): the first variant of
OUT/variants.txt is the base. Where laya-bench reported the backend's
counters, "not replayed" sums the timed requests that ran kernel by kernel
or were captured instead of replaying a graph (0 is what a steady
benchmark should show), and "reduced/refined" the streams run in fp16 first
and in the backend's own precision over the timed requests (with
refinement on, a request that ran reduced and then in its own precision had
near-ties refined). Where laya-bench reported host_ms, "host ms" is the
range over rounds of the request's host phases other than the forward
(parse, prepare, assemble, the rest) and "forward beyond GPU ms" that of the
forward's time beyond the GPU's (recording, launching, waiting, reading
back); "-" for builds that did not report them.

Usage: python3 scripts/gpucheck/cuda-ab.py OUT > OUT/cuda-ab.csv
"""

import csv
import glob
import json
import os
import re
import statistics
import sys

cells = {}  # (name, preset, precision, questions) -> ([p50], [gpu p50], [not replayed], [(reduced, plain)], [host], [beyond])
order = open(os.path.join(sys.argv[1], "variants.txt")).read().split()
for f in sorted(glob.glob(os.path.join(sys.argv[1], "ab-*-r*.json"))):
    m = re.match(r"ab-(.+)-(\w+)-(\w+)-r(\d+)\.json$", os.path.basename(f))
    if not m or m.group(1) not in order:
        continue
    name, preset, prec, _ = m.groups()
    try:
        results = json.load(open(f))["results"]
    except (ValueError, KeyError):
        continue
    for r in results:
        e2e, gpu, missed, streams, host, beyond = cells.setdefault((name, preset, prec, r["questions"]), ([], [], [], [], [], []))
        e2e.append(r["p50_ms"])
        gpu.append(r.get("gpu_p50_ms", 0.0))
        c = r.get("backend_counters")
        if c is not None:
            missed.append(c.get("eager", 0) + c.get("captures", 0))
            if "streams" in c:
                streams.append((c.get("reduced_streams", 0), c["streams"]))
        h = r.get("host_ms")
        if h is not None:
            host.append(h["parse"] + h["prepare"] + h["assemble"] + h["other"])
            if "forward_beyond_gpu" in h:
                beyond.append(h["forward_beyond_gpu"])


def rng(v):
    lo, hi = "%.2f" % min(v), "%.2f" % max(v)
    return lo if lo == hi else lo + "–" + hi


w = csv.writer(sys.stdout)
w.writerow(["variant", "model", "precision", "questions", "P50 ms", "GPU P50 ms", "GPU ÷ " + (order[0] if order else "first"),
            "not replayed", "reduced/refined", "host ms", "forward beyond GPU ms"])
for (name, preset, prec, q) in sorted(cells, key=lambda k: (k[1], k[2], k[3], order.index(k[0]))):
    e2e, gpu, missed, streams, host, beyond = cells[(name, preset, prec, q)]
    base = cells.get((order[0], preset, prec, q))
    ratio = ""
    if base and statistics.median(base[1]) > 0:
        ratio = "%.3f" % (statistics.median(gpu) / statistics.median(base[1]))
    red = "%d/%d" % (sum(a for a, _ in streams), sum(b for _, b in streams)) if streams else "-"
    w.writerow([name, preset, prec, q, rng(e2e), rng(gpu), ratio, sum(missed) if missed else "-", red,
                rng(host) if host else "-", rng(beyond) if beyond else "-"])
