"""Times the model's matrix products alone with numpy's BLAS (OpenBLAS on
Debian's python3-numpy): every encoder and decision-head weight of the
checkpoint (read from model.safetensors' header: names and shapes, so any
checkpoint works) applied as x @ w.T to a [tokens, K] float32 input, as
PyTorch's Linear stores it. Embeddings, the scorer and the act head are left
out (a gather and a few rows), so this is a floor for any fp32 forward that
calls this BLAS. The weights are random float32 (the cost does not depend on
the values).

Usage:
    OPENBLAS_NUM_THREADS=2 python3 blas_bench.py --model DIR [--tokens 93]
        [--questions 1] [--runs 10] [--warmup 2]
Prints one JSON object: median/mean/min ms, GFLOP and the BLAS numpy uses.
"""

import argparse
import json
import re
import statistics
import struct
import time

import numpy as np


def shapes(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    out = []
    for name, t in header.items():
        if name == "__metadata__" or len(t["shape"]) != 2:
            continue
        if re.match(r"(encoder\.layers|head\.layers)\.\d+\.", name):
            out.append((name, t["shape"][0], t["shape"][1]))
    return out


def operands(model, rows):
    """Random float32 weights of model's shapes and [rows, K] inputs; the
    products' FLOPs."""
    rng = np.random.default_rng(0)
    ws = [(name, rng.standard_normal((n, k), dtype=np.float32)) for name, n, k in shapes(model + "/model.safetensors")]
    xs = {k: rng.standard_normal((rows, k), dtype=np.float32) for k in {w.shape[1] for _, w in ws}}
    return ws, xs, sum(2.0 * rows * w.shape[0] * w.shape[1] for _, w in ws)


def products(ws, xs):
    """Every weight's product once, as x @ w.T."""
    for _, w in ws:
        xs[w.shape[1]] @ w.T


def blas_in_use():
    """The BLAS libraries this process loaded and OpenBLAS's kernel name."""
    # The BLAS actually loaded (Debian switches libblas.so.3 by alternatives).
    try:
        with open("/proc/self/maps") as f:
            blas = sorted({line.split()[-1] for line in f if "blas" in line.lower() and ".so" in line})
    except OSError:
        blas = []
    # OpenBLAS picks its kernels by CPU model and falls back to generic ones
    # on models it does not know (Debian's 0.3.21 calls a Xeon of 2024
    # "Prescott": SSE3, ~2.4x slower than its SkylakeX AVX-512 kernels
    # there); OPENBLAS_CORETYPE overrides it. Report what it used.
    core = None
    for lib in blas:
        if "openblas" in lib:
            try:
                import ctypes
                f = ctypes.CDLL(lib).openblas_get_corename
                f.restype = ctypes.c_char_p
                core = f().decode()
            except (OSError, AttributeError):
                pass
    return blas, core


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--tokens", type=int, default=93)
    ap.add_argument("--questions", type=int, default=1)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    args = ap.parse_args()
    rows = args.tokens * args.questions
    ws, xs, flops = operands(args.model, rows)
    samples = []
    for i in range(args.warmup + args.runs):
        t = time.perf_counter()
        products(ws, xs)
        if i >= args.warmup:
            samples.append((time.perf_counter() - t) * 1e3)
    blas, core = blas_in_use()
    print(json.dumps({
        "model": args.model, "rows": rows, "matrices": len(ws), "gflop": flops / 1e9, "blas": blas, "openblas_core": core,
        "numpy": np.__version__, "median_ms": statistics.median(samples), "mean_ms": statistics.fmean(samples),
        "min_ms": min(samples), "samples_ms": samples,
    }))


if __name__ == "__main__":
    main()
