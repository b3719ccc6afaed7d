#!/usr/bin/env python3
"""Where a kernel's time goes, phase by phase, from ncu's per-instruction view.

Reads the CSV of `ncu -i REPORT --csv --page source --print-source sass` (one
or more launches; a .gz is read as gzip) and, for each launch, cuts its SASS at
the instructions that end a phase (copy fences LDGDEPBAR, block barriers
BAR.SYNC, cluster barrier waits UCGABAR_WAIT, EXIT) and sums, per phase, the
warp stall samples (the share of the kernel's time its warps spent there), the
instructions executed and the three largest stall reasons. The instruction that
ends a phase names it; read the phases against the kernel's source.

    python3 scripts/gpucheck/ncu-phases.py phases-sass.csv[.gz] > phases.md
"""
import collections
import csv
import gzip
import sys

ENDS = ("LDGDEPBAR", "BAR.SYNC", "UCGABAR_WAIT", "EXIT")


def launches(rows):
    cur = None
    for r in rows:
        if r and r[0] == "Kernel Name":
            cur = {"name": r[1] if len(r) > 1 else "?", "rows": []}
            yield cur
        elif r and r[0] == "Address" and cur is not None:
            cur["hdr"] = r
        elif cur is not None and "hdr" in cur and len(r) > 5:
            cur["rows"].append(r)


def opcode(src):
    t = src.split()
    if t and t[0].startswith("@"):
        t = t[1:]
    return t[0] if t else ""


def main(path):
    f = gzip.open(path, "rt") if path.endswith(".gz") else open(path)
    rows = list(csv.reader(f))
    for n, k in enumerate(list(launches(rows))):
        i = {h: j for j, h in enumerate(k["hdr"])}
        stalls = [h for h in k["hdr"] if h.startswith("stall_") and "Not Issued" not in h]
        phases, cur = [], None
        for r in k["rows"]:
            if cur is None:
                cur = {"first": r[i["Address"]], "samples": 0, "executed": 0, "why": collections.Counter()}
            cur["samples"] += int(r[i["Warp Stall Sampling (All Samples)"]] or 0)
            cur["executed"] += int(r[i["Instructions Executed"]] or 0)
            for s in stalls:
                cur["why"][s[len("stall_"):]] += int(r[i[s]] or 0)
            op = opcode(r[i["Source"]].strip())
            if op.startswith(ENDS):
                cur["end"] = op
                phases.append(cur)
                cur = None
        total = sum(p["samples"] for p in phases) or 1
        print(f"## launch {n}: {k['name']}, {sum(p['samples'] for p in phases)} samples, "
              f"{sum(p['executed'] for p in phases)} instructions executed\n")
        print("| phase | ends at | samples | share | instructions | top stalls |")
        print("|---:|---|---:|---:|---:|---|")
        for j, p in enumerate(phases):
            if p["samples"] == 0 and p["executed"] == 0:
                continue
            top = ", ".join(f"{w} {c}" for w, c in p["why"].most_common(3) if c)
            print(f"| {j} | {p['end']} | {p['samples']} | {p['samples'] / total:.2f} | {p['executed']} | {top} |")
        print()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
