#!/usr/bin/env python3
"""How a kernel's tensor-core products are ordered in its SASS: in program
order, the runs of HMMA (mma.sync) that each accumulate onto the one just
before (its C operand is the previous HMMA's D). A warp issues in order, and
an HMMA that reads the previous one's result waits for it (tens of cycles),
so long runs are products issued one at a time; runs of 1 are independent
products back to back. Reads nvdisasm's text (ptxas-resources.sh's SASS_DIR
files) or ncu's per-instruction CSV (cuda.sh's phases-sass.csv.gz, one or
more kernels), gzipped or not.

Usage: python3 scripts/gpucheck/mma-chains.py FILE [KERNEL_REGEX]
"""
import collections
import csv
import gzip
import io
import re
import sys

HMMA = re.compile(r"\bHMMA\.\S+\s+(R\d+|RZ),\s*(R\d+|RZ),\s*(R\d+|RZ),\s*(R\d+|RZ)")


def kernels(path):
    """(kernel name, [instruction text]) in file order."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", newline="") as f:
        text = f.read()
    if '"Kernel Name"' not in text:
        name = re.sub(r"\.sass$", "", path.rsplit("/", 1)[-1])
        yield name, [m.group(1) for m in re.finditer(r"/\*[0-9a-f]{4,}\*/\s+([^;]*);", text)]
        return
    name, ins = None, []
    for row in csv.reader(io.StringIO(text)):
        if row and row[0] == "Kernel Name":
            if name is not None:
                yield name, ins
            name, ins = row[1], []
        elif len(row) > 1 and row[0].startswith("0x"):
            ins.append(row[1])
    if name is not None:
        yield name, ins


def runs(ins):
    """The lengths of the runs of dependent HMMA, in program order."""
    out, prev, n = [], None, 0
    for s in ins:
        m = HMMA.search(s)
        if not m:
            continue
        d, c = m.group(1), m.group(4)
        if prev is not None and c == prev:
            n += 1
        else:
            if n:
                out.append(n)
            n = 1
        prev = d
    if n:
        out.append(n)
    return out


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    flt = re.compile(sys.argv[2] if len(sys.argv) > 2 else ".")
    print("| kernel | HMMA | runs | longest run | HMMA in runs of 1 / 2–3 / 4–7 / 8+ |")
    print("|---|---:|---:|---:|---|")
    seen = collections.Counter()
    for name, ins in kernels(sys.argv[1]):
        if not flt.search(name):
            continue
        seen[name] += 1
        r = runs(ins)
        if not r:
            continue
        bins = [sum(x for x in r if lo <= x <= hi) for lo, hi in ((1, 1), (2, 3), (4, 7), (8, 1 << 30))]
        label = name if seen[name] == 1 else "%s (%d)" % (name, seen[name])
        print("| %s | %d | %d | %d | %s |" % (label, sum(r), len(r), max(r), " / ".join(map(str, bins))))


main()
