#!/usr/bin/env python3
"""One table of where the GPU time of replayed requests goes, from the
timelines cuda.sh's timeline step wrote (kernel-gaps.py's timeline-XXQ.md,
XX the preset's first two letters, Q the questions):

    python3 scripts/gpucheck/timeline-table.py DIR/timeline-*.md > cuda-timeline.csv

A row a timeline: the model, the questions, the kernels' time (ms, the
median flush's), and that time by kind of kernel: cuBLAS's GEMMs, the
attention kernels, the LayerNorms, GeGLU and the rest.
"""
import csv
import os
import re
import sys

KINDS = [("GEMMs", lambda k: k == "cuBLAS GEMM"), ("attention", lambda k: k.startswith("attention")),
         ("LayerNorms", lambda k: k.startswith("layer_norm")), ("GeGLU", lambda k: k.startswith("geglu"))]
MODELS = {"en": "english", "mu": "multilingual"}


def table(path):
    """The kernels' ms (the span table's second column) and ms by kernel name."""
    busy, per = None, {}
    with open(path) as f:
        for line in f:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if busy is None and len(cells) == 4 and re.fullmatch(r"[0-9.]+", cells[0]):
                busy = float(cells[1])
            elif len(cells) == 5 and re.fullmatch(r"[0-9.]+", cells[2]) and not cells[0].startswith("-"):
                per[cells[0]] = float(cells[2])
            elif line.startswith("The last flush"):
                break
    if busy is None:
        raise SystemExit("%s: no span table" % path)
    return busy, per


rows = []
for path in sys.argv[1:]:
    m = re.fullmatch(r"timeline-([a-z]{2})(\d+)\.md", os.path.basename(path))
    if not m:
        raise SystemExit("%s: not a timeline-XXQ.md" % path)
    busy, per = table(path)
    parts = []
    for _, match in KINDS:
        parts.append(sum(ms for k, ms in per.items() if match(k)))
    rest = sum(per.values()) - sum(parts)
    rows.append((MODELS.get(m.group(1), m.group(1)), int(m.group(2)), busy, parts, rest))
rows.sort(key=lambda r: (r[0], r[1]))
w = csv.writer(sys.stdout, lineterminator="\n")
w.writerow(["model", "questions", "kernels ms"] + [k + " ms" for k, _ in KINDS] + ["the rest ms"])
for model, q, busy, parts, rest in rows:
    w.writerow([model, q, "%.3f" % busy] + ["%.3f" % p for p in parts] + ["%.3f" % rest])
