#!/usr/bin/env python3
"""Which GEMM kernels wait for the kernel before them (programmatic dependent launch)?

Reads the CSV of `ncu -i REPORT --csv --page source --print-source sass` (launches of
cuBLASLt's kernels, e.g. `ncu --section SourceCounters -k regex:nvjet`) and prints, for
each kernel name, where its SASS has ACQBULK (griddepcontrol.wait) and PREEXIT
(griddepcontrol.launch_dependents), the first global memory access, and any memory
access or branch ahead of the first ACQBULK. A kernel with no ACQBULK reads its inputs
as soon as it starts, so a programmatic edge into it (one that lets it start before
the kernel before it ends) would race. Learn an instruction's SASS name from a kernel
of one's own first (nvcc -arch=sm_90a -cubin; cuobjdump -sass).

    python3 scripts/gpucheck/griddep-scan.py english1.csv > acq-english1.txt
"""
import collections
import csv
import gzip
import importlib.util
import os
import sys

# The launches of ncu's source page, as ncu-phases.py reads them.
_spec = importlib.util.spec_from_file_location("ncu_phases", os.path.join(os.path.dirname(os.path.abspath(__file__)), "ncu-phases.py"))
_phases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_phases)
launches = _phases.launches

MEM = ("LDG", "UTMALDG", "LDGSTS", "UBLKCP", "LD.", "STG", "UTMASTG", "RED", "ATOMG", "UBLKRED", "UTMAREDG", "ST.", "ATOM.")


def main(path):
    f = gzip.open(path, "rt") if path.endswith(".gz") else open(path)
    seen = collections.OrderedDict()
    for k in list(launches(list(csv.reader(f)))):
        if k["name"] in seen:
            seen[k["name"]]["n"] += 1
            continue
        i = {h: j for j, h in enumerate(k["hdr"])}
        ops = []
        for r in k["rows"]:
            s = r[i["Source"]].strip()
            t = s.split()
            if t and t[0].startswith("@"):
                t = t[1:]
            ops.append((t[0] if t else "", s))
        acq = [j for j, o in enumerate(ops) if o[0].startswith("ACQBULK")]
        pre = [j for j, o in enumerate(ops) if o[0].startswith("PREEXIT")]
        mem = [j for j, o in enumerate(ops) if o[0].startswith(MEM)]
        first = acq[0] if acq else len(ops)
        seen[k["name"]] = {
            "n": 1, "instr": len(ops), "acq": acq[:4], "pre": pre[:4], "mem": mem[:1],
            "mem_before": [ops[j][1] for j in mem if acq and j < first][:6],
            "br_before": [o[1] for o in ops[:first] if acq and o[0].startswith(("BRA", "BRX", "JMP", "CALL", "EXIT", "RET"))][:8],
        }
    for name, v in seen.items():
        print(name, "launches", v["n"], "instr", v["instr"], "ACQBULK at", v["acq"], "PREEXIT at", v["pre"], "first mem", v["mem"])
        print("   mem before first ACQBULK:", v["mem_before"])
        print("   branches before first ACQBULK:", v["br_before"])


if __name__ == "__main__":
    main(sys.argv[1])
