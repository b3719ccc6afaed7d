"""Turns one run.sh output folder into the CSV tables of BENCHMARKS.md:

  cuda-vs-torch.csv   per model and question count: laya-bench end to end
                      (tokenize → forward → answer JSON) on the cuda backend
                      in each precision, and PyTorch's modes on the same GPU,
                      each cell the range of the rounds' medians (ms)
  cuda-precision.csv  (with --goldens LOG) per checkpoint and precision, the
                      golden test's agreement with upstream, from the
                      GOLDENS lines of backend/cuda's TestForwardGoldens
  cuda-buckets.csv    (where run.sh left laya-vary-*.json) requests cycling
                      through token counts (laya-bench --vary), with the
                      cuda backend's 16-token buckets and without

Usage: python3 summarize.py DIR [--goldens goldens.log]
"""

import argparse
import csv
import glob
import json
import os
import re
import statistics

ap = argparse.ArgumentParser()
ap.add_argument("dir")
ap.add_argument("--goldens")
args = ap.parse_args()

ours = {}  # (preset, questions, precision) -> [p50 per round]
tokens = {}
for f in sorted(glob.glob(os.path.join(args.dir, "laya-*-r*.json"))):
    if os.path.basename(f).startswith("laya-vary-"):
        continue
    preset, prec = re.match(r"laya-(\w+)-(\w+)-r\d+\.json", os.path.basename(f)).groups()
    for r in json.load(open(f))["results"]:
        ours.setdefault((preset, r["questions"], prec), []).append(r["p50_ms"])
        tokens[(preset, r["questions"])] = r["input_tokens"]

torch = {}  # (preset, rows, mode) -> [median per round]
for f in sorted(glob.glob(os.path.join(args.dir, "torch-*.jsonl"))):
    for line in open(f):
        d = json.loads(line)
        if "median_ms" in d:
            torch.setdefault((d["preset"], d["rows"], d["mode"]), []).append(d["median_ms"])


def cell(xs):
    if not xs:
        return "-"
    lo, hi = min(xs), max(xs)
    return f"{lo:.2f}" if f"{lo:.2f}" == f"{hi:.2f}" else f"{lo:.2f}–{hi:.2f}"


def med(xs):
    return statistics.median(xs) if xs else None


# run.sh names a precision with options (PRECISIONS word "fp16x2:refine=off")
# fp16x2_refine_off; the plain names are the registered backend's defaults.
known = ("fp32", "fp16x2", "fp16x2_refine_off", "fp16")
precisions = [p for p in known if any(k[2] == p for k in ours)]
precisions += sorted({k[2] for k in ours} - set(known))
modes = [("eager32", "PyTorch eager fp32"), ("eager16", "PyTorch eager fp16"), ("graph16+io", "PyTorch CUDA graph fp16"),
         ("compile16", "PyTorch compile fp16")]
# A mode the run left out (TORCH_MODES) gets no column.
modes = [m for m in modes if any(k[2] == m[0] for k in torch)]
header = ["model", "questions", "tokens (ours / PyTorch)"] + [f"cuda {p} ms" for p in precisions] + [m[1] + " ms" for m in modes]
ratios = [p for p in precisions if p != "fp32"]
header += [f"PyTorch best ÷ cuda {p}" for p in ratios]
rows = []
for preset in ("english", "multilingual"):
    for q in sorted({k[1] for k in ours if k[0] == preset}):
        row = [preset, str(q), f"{tokens.get((preset, q), '-')} / {93 * q}"]
        row += [cell(ours.get((preset, q, p), [])) for p in precisions]
        row += [cell(torch.get((preset, q, m), [])) for m, _ in modes]
        best = min((med(torch[(preset, q, m)]) for m in ("graph16+io", "compile16") if (preset, q, m) in torch), default=None)
        for p in ratios:
            o = med(ours.get((preset, q, p), []))
            row.append(f"{best / o:.2f}" if best and o else "-")
        rows.append(row)
with open(os.path.join(args.dir, "cuda-vs-torch.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(header)
    w.writerows(rows)

if args.goldens:
    out = [["checkpoint", "precision", "rows", "same answer as upstream", "max |Δlogit|", "max |Δcalibrated p|",
            "max |Δact p|", "gate"]]
    for line in open(args.goldens):
        m = re.search(r"GOLDENS \| (\S+) \| (\S+) \| (\d+) rows \| argmax (.*?) \| max \|Δlogit\| (\S+) \| "
                      r"(?:max logit error spread \S+ \| )?max \|Δcalibrated p\| (\S+) \| max \|Δact p\| (\S+) \|", line)
        if not m:
            continue
        ck, prec, n, agree, dl, dp, da = m.groups()
        if prec == "fp32":
            gate = "holds (logits ≤ 1e-4, act p ≤ 1e-5)" if float(dl) <= 1e-4 and float(da) <= 1e-5 else "fails"
            agree = "-"
        else:
            # "606/606", possibly followed by a note such as "(reported, not gated)".
            a, b = re.match(r"(\d+)/(\d+)", agree).groups()
            agree = f"{a}/{b}"
            ok = a == b and float(dp) <= 0.005 and float(da) <= 0.005
            gate = "holds (same answers, p within 0.005)" if ok else "fails"
        out.append([ck, prec, n, agree, dl, dp, da, gate])
    with open(os.path.join(args.dir, "cuda-precision.csv"), "w", newline="") as f:
        csv.writer(f).writerows(out)

# laya-vary-<preset>-b<bucket>-r<round>.json: --vary runs, bucket 16 and 1.
vary = {}  # (preset, questions, bucket) -> [(p50, mean)]
cycle = {}
for f in sorted(glob.glob(os.path.join(args.dir, "laya-vary-*-r*.json"))):
    preset, bucket = re.match(r"laya-vary-(\w+)-b(\d+)-r\d+\.json", os.path.basename(f)).groups()
    d = json.load(open(f))
    for r in d["results"]:
        vary.setdefault((preset, r["questions"], int(bucket)), []).append((r["p50_ms"], r["mean_ms"]))
        cycle[(preset, r["questions"])] = r["input_tokens"]
if vary:
    out = [["model", "questions", "tokens of the first request", "16-token buckets P50 ms", "16-token buckets mean ms",
            "no buckets P50 ms", "no buckets mean ms", "no buckets ÷ buckets (P50)"]]
    for preset in ("english", "multilingual"):
        for q in sorted({k[1] for k in vary if k[0] == preset}):
            b16, b1 = vary.get((preset, q, 16), []), vary.get((preset, q, 1), [])
            p16, p1 = med([x[0] for x in b16]), med([x[0] for x in b1])
            out.append([preset, str(q), str(cycle[(preset, q)]), cell([x[0] for x in b16]), cell([x[1] for x in b16]),
                        cell([x[0] for x in b1]), cell([x[1] for x in b1]), f"{p1 / p16:.2f}" if p16 and p1 else "-"])
    with open(os.path.join(args.dir, "cuda-buckets.csv"), "w", newline="") as f:
        csv.writer(f).writerows(out)
