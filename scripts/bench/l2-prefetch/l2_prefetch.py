"""Does a GEMM of few rows run faster when its weight is already in L2?

Laya's encoder at one question runs 4 GEMMs a layer on ~93 rows whose
weights (2-11 MB each, fp16) come from HBM every time: cuBLASLt takes
5-9 us for each on an H100/H200, several times the weight's streaming time.
This measures, per GEMM shape, in CUDA graphs of 28 layers with distinct
weights (as the model's, too large together for L2):

  cold       a short elementwise kernel (standing in for a LayerNorm), then
             the GEMM: its weight comes from HBM
  warm       the same with one weight for every layer: it comes from L2
  bulk       the cold case with a kernel issuing cp.async.bulk.prefetch.L2
             for the weight just before the short kernel (what a kernel of
             ours before the GEMM could issue itself)
  line       the same with prefetch.global.L2::evict_last, a 128-byte line
             a thread step
  short      the short kernel alone
  ahead      the cold case with the next layer's weight prefetched (bulk)
             before the GEMM, so that it streams in while this one runs
  side       the same prefetch on a branch of the graph of its own (forked
             after the short kernel, joined at the end), so that it adds no
             kernel to the chain: what a kernel of ours that issues the
             prefetch as it starts, before it waits, would cost
  side2      the same, two layers ahead
  stream     the short kernel, then a kernel that only reads the weight
             from HBM (16-byte loads, four in flight a thread, over 8 blocks
             a multiprocessor): the floor under any GEMM that reads its
             weight once, which "cold" minus "short" is measured against

Prints one JSON line per (shape, mode, round): us per layer (GEMM + short
kernel), median over replays. Needs PyTorch on CUDA and NVRTC (ctypes).

Usage: python3 l2_prefetch.py [--rows 93] [--rounds 3] [--reps 30] [--modes short,cold,...]
"""

import argparse
import ctypes
import json
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import cudalib  # noqa: E402  (scripts/bench/cudalib.py)

ap = argparse.ArgumentParser()
cudalib.add_chain_args(ap)
ap.add_argument("--modes", default="short,cold,warm,bulk,line,ahead,side,side2,stream")
args = ap.parse_args()

SRC = r"""
extern "C" __global__ void bulk(const char* p, long long bytes, long long chunk) {
    long long i = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * chunk;
    if (i >= bytes) return;
    long long n = bytes - i < chunk ? bytes - i : chunk;
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" :: "l"(p + i), "r"((unsigned)n) : "memory");
}
extern "C" __global__ void stream(const uint4* p, long long n16, unsigned* out) {
    long long step = (long long)gridDim.x * blockDim.x, i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned acc = 0;
    for (; i + 3 * step < n16; i += 4 * step) {
        uint4 a = p[i], b = p[i + step], c = p[i + 2 * step], d = p[i + 3 * step];
        acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^ d.z ^ d.w;
    }
    for (; i < n16; i += step) {
        uint4 a = p[i];
        acc ^= a.x ^ a.y ^ a.z ^ a.w;
    }
    if (acc == 0x9e3779b9u) out[blockIdx.x] = acc; // keeps the loads; the value is never used
}
extern "C" __global__ void line(const char* p, long long bytes) {
    long long step = (long long)gridDim.x * blockDim.x * 128;
    for (long long i = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * 128; i < bytes; i += step)
        asm volatile("prefetch.global.L2::evict_last [%0];" :: "l"(p + i) : "memory");
}
"""


torch.cuda.init()
torch.zeros(1, device="cuda")
cuda, nvrtc = cudalib.libraries(torch)
cc = torch.cuda.get_device_capability()
ptx = cudalib.compile_source(nvrtc, SRC, "pf.cu", ["--gpu-architecture=compute_%d%d" % cc])
mod = ctypes.c_void_p()
assert cuda.cuModuleLoadData(ctypes.byref(mod), ptx) == 0
fns = {}
for name in ("bulk", "line", "stream"):
    f = ctypes.c_void_p()
    assert cuda.cuModuleGetFunction(ctypes.byref(f), mod, name.encode()) == 0
    fns[name] = f


def launch(fn, grid, block, *argv):
    ptrs = (ctypes.c_void_p * len(argv))(*[ctypes.cast(ctypes.pointer(a), ctypes.c_void_p) for a in argv])
    s = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    rc = cuda.cuLaunchKernel(fns[fn], grid, 1, 1, block, 1, 1, 0, s, ptrs, None)
    assert rc == 0, rc


SMS = torch.cuda.get_device_properties(0).multi_processor_count
sink = torch.zeros(8 * SMS, dtype=torch.int32, device="cuda")


def stream(t):
    n16 = t.numel() * t.element_size() // 16
    grid = max(1, min(8 * SMS, (n16 // 4 + 255) // 256))
    launch("stream", grid, 256, ctypes.c_void_p(t.data_ptr()), ctypes.c_longlong(n16), ctypes.c_void_p(sink.data_ptr()))


def prefetch(t, how):
    p, b = ctypes.c_void_p(t.data_ptr()), t.numel() * t.element_size()
    if how == "bulk":
        chunk = 16384
        th = (b + chunk - 1) // chunk
        launch("bulk", (th + 127) // 128, 128, p, ctypes.c_longlong(b), ctypes.c_longlong(chunk))
    else:
        launch("line", 264, 256, p, ctypes.c_longlong(b))


H, I, L, M = args.hidden, args.inter, args.layers, args.rows
shapes = {"qkv": (H, 3 * H), "attn_out": (H, H), "mlp_in": (H, 2 * I), "mlp_out": (I, H)}
dev = "cuda"
for name, (k, n) in shapes.items():
    ws = [torch.randn(n, k, device=dev, dtype=torch.half) * 0.02 for _ in range(L)]
    x = torch.randn(M, k, device=dev, dtype=torch.half)
    y = torch.empty(M, n, device=dev, dtype=torch.half)
    s = torch.randn(M, H, device=dev)

    def body(mode):
        main = torch.cuda.current_stream()
        side = torch.cuda.Stream() if mode.startswith("side") else None
        ahead = 2 if mode == "side2" else 1
        for l in range(L):
            w = ws[0] if mode == "warm" else ws[l]
            if mode in ("bulk", "line"):
                prefetch(w, mode)
            s.mul_(1.0001)  # the short kernel before the GEMM
            if mode == "ahead" and l + 1 < L:
                prefetch(ws[l + 1], "bulk")
            if side is not None and l + ahead < L:
                side.wait_stream(main)
                with torch.cuda.stream(side):
                    prefetch(ws[l + ahead], "bulk")
            if mode == "stream":
                stream(w)
            elif mode != "short":
                torch.matmul(x, w.t(), out=y)
        if side is not None:
            main.wait_stream(side)

    graphs = cudalib.capture(torch, args.modes.split(","), body)
    flush = torch.empty(512 * 1024 * 1024 // 4, device=dev)
    for r in range(args.rounds):
        for mode, g in graphs.items():
            ts = cudalib.replay_us(torch, g, args.reps, flush, L)
            print(json.dumps({"gpu": torch.cuda.get_device_name(), "shape": name, "k": k, "n": n, "rows": M, "mode": mode,
                              "round": r, "us_per_layer": round(statistics.median(ts), 3), "min": round(min(ts), 3)}), flush=True)
    del ws, flush
    torch.cuda.empty_cache()
