"""Reads the laya-bench and torch_bench JSON files run.sh wrote and prints
the ratio table (markdown) and summary.json. With rounds (files ending in
-rN), the samples of every round are pooled: ours' P50 and PyTorch's median
are taken over all of them, and the per-round ratios' range is printed."""

import glob
import json
import os
import re
import statistics
import sys

out = sys.argv[1]
groups = {}  # (preset, cores) -> [(round suffix, laya-bench json)]
for path in sorted(glob.glob(os.path.join(out, "ours-*.json"))):
    m = re.match(r"ours-(.+)-(\d+)(-r\d+)?\.json$", os.path.basename(path))
    if not m:
        continue
    with open(path) as f:
        groups.setdefault((m.group(1), int(m.group(2))), []).append((m.group(3) or "", json.load(f)))
rows = []
for (preset, cores), rounds in sorted(groups.items()):
    for r in rounds[0][1]["results"]:
        q = r["questions"]
        ours_s, torch_s, ratios, t = [], [], [], None
        for sfx, ours in rounds:
            tpath = os.path.join(out, "torch-%s-%d-q%d%s.json" % (preset, cores, q, sfx))
            if not os.path.exists(tpath):
                continue
            with open(tpath) as f:
                t = json.load(f)
            o = [x for x in ours["results"] if x["questions"] == q][0]
            ours_s += o["samples_ms"]
            torch_s += t["samples_ms"]
            ratios.append(statistics.median(o["samples_ms"]) / t["median_ms"])
        if t is None:
            continue
        ours_p50, torch_med = statistics.median(ours_s), statistics.median(torch_s)
        rows.append({
            "preset": preset, "cores": cores, "questions": q,
            "tokens": r["input_tokens"], "torch_tokens_per_row": t["tokens_per_row"], "rounds": len(ratios),
            "ours_p50_ms": ours_p50, "ours_samples": len(ours_s),
            "torch_median_ms": torch_med, "torch_samples": len(torch_s),
            "ratio_ours_over_torch": ours_p50 / torch_med,
            "round_ratios": ratios,
            "ours_load_ms": rounds[0][1]["load_ms"], "torch_load_s": t["load_s"], "torch_threads": t["threads"],
        })
print("| workload | cores | tokens | ours end to end, P50 | PyTorch forward, median | ours / PyTorch | per-round ratios |")
print("|---|---:|---:|---:|---:|---:|---|")
for r in rows:
    print("| %s, %d question%s | %d | %d | %.1f ms | %.1f ms | %.2f× | %s |" % (
        r["preset"], r["questions"], "" if r["questions"] == 1 else "s", r["cores"], r["tokens"],
        r["ours_p50_ms"], r["torch_median_ms"], r["ratio_ours_over_torch"],
        ", ".join("%.2f" % x for x in r["round_ratios"])))
with open(os.path.join(out, "summary.json"), "w") as f:
    json.dump(rows, f, indent=1)
