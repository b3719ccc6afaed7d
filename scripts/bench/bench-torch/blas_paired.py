"""Ours against numpy's BLAS doing the model's matrix products alone, run by
run (BENCHMARKS.md's "ours against the BLAS products alone"): one laya-bench
request end to end, then one pass of every encoder and decision-head
weight's product at the request's token count
(blas_bench.py's operands, fp32), then the next pair in the other order, on
the same cores. blas.sh alternates whole processes a few rounds; on a
shared machine whose speed moves by tens of percent within minutes, that
left the ratio inside the drift. Here the ratio is read per pair (pacing.py:
the median per-pair ratio with a 95 % bootstrap interval).

Needs numpy (Debian: python3-numpy with libopenblas0-pthread). Run it
pinned, as paired.sh with REFERENCE=blas does:
    OPENBLAS_NUM_THREADS=2 GOMAXPROCS=2 taskset -c 0-1 python3 blas_paired.py \\
        --laya-bench bin/laya-bench --model DIR --questions 10 --pairs 30
Prints one JSON object (both sides' samples, the pairs, the ratios, the BLAS).
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import blas_bench  # noqa: E402
import numpy as np  # noqa: E402
import pacing  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    args = pacing.parse_args(ap)

    ours = pacing.Paced(args.laya_bench, args.model, args.questions, args.warmup)
    try:
        header = ours.header()
        # The products at exactly the request's token count (every row of
        # ours is a real token: batches are packed).
        ws, xs, flops = blas_bench.operands(args.model, header["input_tokens"])

        def blas_once():
            t = time.perf_counter()
            blas_bench.products(ws, xs)
            return (time.perf_counter() - t) * 1e3

        pairs = pacing.run_pairs(ours.once, blas_once, args.pairs, args.warmup, args.gap, "BLAS")
    finally:
        ours.close()

    blas, core = blas_bench.blas_in_use()
    print(json.dumps({
        "model": os.path.basename(os.path.normpath(args.model)), "questions": args.questions,
        "input_tokens": header["input_tokens"], "gflop": flops / 1e9, "blas": blas, "openblas_core": core,
        "numpy": np.__version__, "gap_s": args.gap,
        **pacing.summary(pairs, "blas"),
    }))


if __name__ == "__main__":
    main()
