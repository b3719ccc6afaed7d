"""Reads the laya-bench and torch_bench JSON files run.sh wrote and prints
the ratio table (markdown) and summary.json."""

import glob
import json
import os
import sys

out = sys.argv[1]
rows = []
for path in sorted(glob.glob(os.path.join(out, "ours-*.json"))):
    tag = os.path.basename(path)[len("ours-"):-len(".json")]  # preset-cores
    preset, cores = tag.rsplit("-", 1)
    with open(path) as f:
        ours = json.load(f)
    for r in ours["results"]:
        tpath = os.path.join(out, "torch-%s-%s-q%d.json" % (preset, cores, r["questions"]))
        if not os.path.exists(tpath):
            continue
        with open(tpath) as f:
            t = json.load(f)
        rows.append({
            "preset": preset, "cores": int(cores), "questions": r["questions"],
            "tokens": r["input_tokens"], "torch_tokens_per_row": t["tokens_per_row"],
            "ours_p50_ms": r["p50_ms"], "ours_mean_ms": r["mean_ms"],
            "torch_median_ms": t["median_ms"], "torch_mean_ms": t["mean_ms"],
            "ratio_ours_over_torch": r["p50_ms"] / t["median_ms"],
            "ours_load_ms": ours["load_ms"], "torch_load_s": t["load_s"], "torch_threads": t["threads"],
        })
print("| workload | cores | tokens | ours end to end, P50 | PyTorch forward, median | ours / PyTorch |")
print("|---|---:|---:|---:|---:|---:|")
for r in rows:
    print("| %s, %d question%s | %d | %d | %.1f ms | %.1f ms | %.2f× |" % (
        r["preset"], r["questions"], "" if r["questions"] == 1 else "s", r["cores"], r["tokens"],
        r["ours_p50_ms"], r["torch_median_ms"], r["ratio_ours_over_torch"]))
with open(os.path.join(out, "summary.json"), "w") as f:
    json.dump(rows, f, indent=1)
