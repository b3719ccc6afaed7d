#!/usr/bin/env python3
"""Where a replayed forward's GPU time goes: in the kernels, or between them.

    CUDA_INJECTION64_PATH=$PWD/libcupti-trace.so CUPTI_TRACE_OUT=timeline-en1.csv \
        LAYA_CUDA=precision=fp16x2 laya-bench --backend cuda --synthetic english \
        --questions 1 --warmup 5 --runs 20 --batch-size 64
    python3 scripts/gpucheck/kernel-gaps.py timeline-en1.csv [LAST] > timeline-en1.md

The CSV (start ns, end ns, kernel name a line) is what scripts/gpucheck/cupti-trace.c
writes; CUPTI traces each kernel of a replayed CUDA graph on its own, with the GPU's own
timestamps, so the gaps between kernels are what launch latency
(what programmatic dependent launch hides, and a kernel's ramp and drain) costs inside
a graph: the part of a forward that no faster kernel removes. A flush of the backend
ends with its pack_out kernel; the last LAST flushes (default 10: timed requests, not
warm-up) are summed: their span (first kernel's start to pack_out's end), the time some
kernel ran (the union of the kernels' intervals, which PDL lets overlap), the idle rest,
and by kernel name the launches, time and the idle time just before each; then the
last flush kernel by kernel.
"""
import collections
import csv
import statistics
import sys

from kernelclass import kernel_class


def flushes(path):
    with open(path, newline="") as f:
        rows = sorted((int(r[0]), int(r[1]), ",".join(r[2:])) for r in csv.reader(f) if len(r) >= 3)
    out, cur = [], []
    for start, end, name in rows:
        cur.append((start, end, name))
        if name == "pack_out":
            out.append(cur)
            cur = []
    return out


def summarize(flush):
    """Span, busy and idle ns of a flush, and per kernel name [launches, ns, idle ns before]."""
    span = flush[-1][1] - flush[0][0]
    busy, reach = 0, flush[0][0]
    per = collections.defaultdict(lambda: [0, 0, 0])
    for start, end, name in flush:
        idle = max(0, start - reach)
        busy += max(0, end - max(start, reach))
        reach = max(reach, end)
        p = per[kernel_class(name)]
        p[0] += 1
        p[1] += end - start
        p[2] += idle
    return span, busy, span - busy, per


def main():
    path = sys.argv[1]
    last = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    fl = flushes(path)
    if not fl:
        sys.exit(f"kernel-gaps: no flush (pack_out) in {path}")
    fl = fl[-last:]
    sums = [summarize(f) for f in fl]
    ms = lambda ns: ns / 1e6
    print(f"{len(fl)} flushes of {path}, {len(fl[-1])} kernels the last; medians:\n")
    print("| span ms | kernels running ms | idle between kernels ms | idle share |")
    print("|---:|---:|---:|---:|")
    span = statistics.median(s[0] for s in sums)
    busy = statistics.median(s[1] for s in sums)
    idle = statistics.median(s[2] for s in sums)
    print(f"| {ms(span):.3f} | {ms(busy):.3f} | {ms(idle):.3f} | {idle / span:.2f} |\n")
    names = sorted({n for s in sums for n in s[3]}, key=lambda n: -statistics.median(s[3][n][1] for s in sums))
    print("| kernel | launches | ms | µs each | idle before, ms |")
    print("|---|---:|---:|---:|---:|")
    for n in names:
        launches = statistics.median(s[3][n][0] for s in sums)
        t = statistics.median(s[3][n][1] for s in sums)
        gap = statistics.median(s[3][n][2] for s in sums)
        print(f"| {n} | {launches:g} | {ms(t):.3f} | {t / max(launches, 1) / 1e3:.1f} | {ms(gap):.3f} |")
    print("\nThe last flush, kernel by kernel (µs from its first kernel's start; negative idle: overlap):\n")
    print("| start | µs | idle before | kernel |")
    print("|---:|---:|---:|---|")
    f = fl[-1]
    t0, reach = f[0][0], f[0][0]
    for start, end, name in f:
        print(f"| {(start - t0) / 1e3:.1f} | {(end - start) / 1e3:.1f} | {(start - reach) / 1e3:.1f} | {name[:60]} |")
        reach = max(reach, end)


if __name__ == "__main__":
    main()
