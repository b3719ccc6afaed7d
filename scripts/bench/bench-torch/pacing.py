"""Pair-by-pair timing of ours against a reference, shared by paired.py
(PyTorch's forward) and blas_paired.py (numpy's BLAS doing the products
alone): laya-bench --paced as a child process (it loads and warms up,
reports its request's token count, then times one request per line we
send), pairs of one run of each side alternating which goes first, and the
median per-pair ratio with a 95 % bootstrap interval.

Both sides sleep `gap` seconds before each run so that the other's idle
threads (OpenMP's, OpenBLAS's and our pool's spin-waits) have stopped
polling. Standard library only.
"""

import json
import random
import statistics
import subprocess
import sys
import time


def parse_args(ap):
    """Adds the options both drivers take (the laya-bench binary, the
    checkpoint, the workload, the pairs) to ap and parses them."""
    ap.add_argument("--laya-bench", required=True, help="the laya-bench binary")
    ap.add_argument("--model", required=True)
    ap.add_argument("--questions", type=int, default=1)
    ap.add_argument("--pairs", type=int, default=12)
    ap.add_argument("--warmup", type=int, default=3, help="untimed runs of each side before the pairs")
    ap.add_argument("--gap", type=float, default=0.3, help="seconds of sleep before each timed run")
    args = ap.parse_args()
    if args.pairs < 2:
        ap.error("--pairs must be at least 2")
    return args


def bootstrap_median(xs, reps=4000, seed=7):
    """95 % percentile-bootstrap interval of the median of xs."""
    rng = random.Random(seed)
    meds = sorted(statistics.median(rng.choices(xs, k=len(xs))) for _ in range(reps))
    return meds[int(0.025 * reps)], meds[int(0.975 * reps) - 1]


class Paced:
    """laya-bench --paced as a child: header() once, then once() per run."""

    def __init__(self, laya_bench, model, questions, warmup):
        self.proc = subprocess.Popen(
            [laya_bench, "--model", model, "--questions", str(questions), "--warmup", str(max(1, warmup)), "--paced"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)

    def header(self):
        line = self.proc.stdout.readline()
        if not line:
            sys.exit("pacing: laya-bench ended before its header (see its stderr above)")
        return json.loads(line)

    def once(self):
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            sys.exit("pacing: laya-bench ended early (see its stderr above)")
        return json.loads(line)["ms"]

    def close(self):
        try:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.flush()
            self.proc.stdin.close()
        except (BrokenPipeError, ValueError):
            pass
        self.proc.wait(timeout=60)


def run_pairs(ours_once, ref_once, pairs, warmup, gap, ref_name):
    """Warms the reference up, then times pairs pairs; returns [(ours, ref)]."""
    for _ in range(warmup):
        ref_once()
    out = []
    for i in range(pairs):
        # Alternate which side goes first: a drift within a pair then
        # favours neither.
        order = ("ours", "ref") if i % 2 == 0 else ("ref", "ours")
        got = {}
        for side in order:
            time.sleep(gap)
            got[side] = ours_once() if side == "ours" else ref_once()
        out.append((got["ours"], got["ref"]))
        print("   pair %d: ours %.1f ms, %s %.1f ms, %.3fx" % (i + 1, got["ours"], ref_name, got["ref"],
              got["ours"] / got["ref"]), file=sys.stderr, flush=True)
    return out


def summary(pairs, ref_key):
    """The pairs' medians, per-pair ratio, its interval and the samples, with
    the reference's fields named ref_key (torch, blas)."""
    o = [p[0] for p in pairs]
    r = [p[1] for p in pairs]
    ratios = [a / b for a, b in pairs]
    lo, hi = bootstrap_median(ratios)
    return {
        "pairs": len(pairs),
        "ours_median_ms": statistics.median(o), ref_key + "_median_ms": statistics.median(r),
        "ratio_of_medians": statistics.median(o) / statistics.median(r),
        "median_pair_ratio": statistics.median(ratios), "ci95": [lo, hi],
        "pairs_ours_faster": sum(x < 1 for x in ratios),
        "ours_ms": o, ref_key + "_ms": r,
    }
