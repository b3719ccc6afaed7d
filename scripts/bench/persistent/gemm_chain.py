"""One persistent kernel for a chain of GEMMs of few rows, against cuBLAS.

At one question the encoder's GEMMs (93 rows) take cuBLASLt 5-8 us each on
an H100/H200, several times their weight's streaming time, and none of them
can start before the kernel before it ends. This measures what one
persistent kernel (chain.cu) makes of the same chain: the English encoder's
four GEMMs a layer (qkv 1024 -> 3072, attention output 1024 -> 1024, MLP
input 1024 -> 5248, MLP output 2624 -> 1024), 28 layers of distinct weights
(fp16, about 690 MB: from HBM, as the model's), each GEMM reading the one
before it (the attention, GeGLU and LayerNorm between them left out), as

  cublas     torch.matmul, 93 rows, a CUDA graph of the 112 GEMMs
  chain      chain.cu: a grid-wide barrier between GEMMs, each block's piece
             of the next weight copied while it works on this one
  chain+1    the same with one more barrier a layer (where the attention
             would run), and chain+3 three (attention and two LayerNorms)
  flow       chain with a counter a (GEMM, tile of y) for the barrier: a
             block waits only for the tiles of y it reads
  flow+l2    flow with each block asking L2 for its piece of the GEMM after
             next (its shared memory holds two GEMMs' pieces, this one's
             and the next's)
  nomma      chain without the products (copies, adding, barriers)
  floor      chain without the products and the adding: the weights'
             copies, x's loads and the barriers alone

and checks chain's outputs against float32 products of the same operands
(one layer, each GEMM from chain's own input to it), flow's against
chain's bit for bit, and the whole chain against cuBLAS's, loosely (the two
round differently at every step).

Prints one JSON line per (mode, round): us per layer, median over replays
(L2 flushed before each). Needs PyTorch on CUDA and NVRTC (ctypes).

Usage: python3 gemm_chain.py [--rounds 3] [--reps 30] [--layers 28]
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
ap.add_argument("--tiles", type=int, default=0, help="clusters (default: as many as fit at once, at most 16)")
ap.add_argument("--cluster", type=int, default=8, help="blocks a cluster: k's pieces (2, 4 or 8)")
ap.add_argument("--modes", default="cublas,chain,flow,flow+l2,chain+1,chain+3,nomma,floor")
args = ap.parse_args()

ROWS, CL, WARPS = 96, args.cluster, 12


def check(rc, what):
    if rc != 0:
        raise SystemExit("%s: CUDA error %d" % (what, rc))


torch.cuda.init()
torch.zeros(1, device="cuda")
cuda, nvrtc = cudalib.libraries(torch)
src = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "chain.cu")).read()
cc = torch.cuda.get_device_capability()
cubin = cudalib.compile_source(nvrtc, src, "chain.cu", ["--gpu-architecture=sm_%d%d" % cc, "-std=c++17", "-DCL=%d" % CL], cubin=True)
mod = ctypes.c_void_p()
check(cuda.cuModuleLoadData(ctypes.byref(mod), cubin), "cuModuleLoadData")
fn = ctypes.c_void_p()
check(cuda.cuModuleGetFunction(ctypes.byref(fn), mod, b"chain"), "cuModuleGetFunction")
regs, local = ctypes.c_int(), ctypes.c_int()
cuda.cuFuncGetAttribute(ctypes.byref(regs), 4, fn)   # CU_FUNC_ATTRIBUTE_NUM_REGS
cuda.cuFuncGetAttribute(ctypes.byref(local), 3, fn)  # CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES
gpu = torch.cuda.get_device_name()
print(json.dumps({"gpu": gpu, "kernel": "chain", "registers": regs.value, "local_bytes": local.value}), flush=True)


class Attr(ctypes.Structure):
    _fields_ = [("id", ctypes.c_uint), ("pad", ctypes.c_uint), ("value", ctypes.c_ubyte * 64)]


class Config(ctypes.Structure):
    _fields_ = [("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3), ("shared", ctypes.c_uint), ("stream", ctypes.c_void_p),
                ("attrs", ctypes.POINTER(Attr)), ("nattrs", ctypes.c_uint)]


def config(grid, shared, stream):
    a = (Attr * 1)()
    a[0].id = 4  # CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    for i, v in enumerate((CL, 1, 1)):
        a[0].value[4 * i:4 * i + 4] = list(v.to_bytes(4, "little"))
    c = Config()
    c.grid[:] = [grid, 1, 1]
    c.block[:] = [WARPS * 32, 1, 1]
    c.shared = shared
    c.stream = stream
    c.attrs = ctypes.cast(a, ctypes.POINTER(Attr))
    c.nattrs = 1
    return c, a


H, I, L, M = args.hidden, args.inter, args.layers, args.rows
if not 0 < M <= ROWS:
    raise SystemExit("--rows: 1 to %d (chain.cu's ROWS)" % ROWS)
shapes = [("qkv", H, 3 * H), ("attn_out", H, H), ("mlp_in", H, 2 * I), ("mlp_out", I, H)]  # (name, k, n)
for _, k, _ in shapes:
    assert k % 64 == 0, "k must be a multiple of 64"
# Every block takes all the shared memory a block may have (x's piece
# gets what the weights leave): one block a multiprocessor, and the
# clusters that fit at once are the most the grid may have.
optin = ctypes.c_int()
check(cuda.cuDeviceGetAttribute(ctypes.byref(optin), 97, 0), "cuDeviceGetAttribute")  # MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
smem = optin.value
check(cuda.cuFuncSetAttribute(fn, 8, smem), "cuFuncSetAttribute")  # MAX_DYNAMIC_SHARED_SIZE_BYTES
cfg, keep = config(16 * CL, smem, None)
nclusters = ctypes.c_int()
check(cuda.cuOccupancyMaxActiveClusters(ctypes.byref(nclusters), fn, ctypes.byref(cfg)), "cuOccupancyMaxActiveClusters")
tiles = args.tiles or min(16, nclusters.value)
if nclusters.value < tiles:
    raise SystemExit("only %d clusters fit at once; run with --tiles %d" % (nclusters.value, nclusters.value))


def piece(n, k, tile, s):
    n8, k64 = n // 8, k // 64
    return tile * n8 // tiles, (tile + 1) * n8 // tiles, s * k64 // CL, (s + 1) * k64 // CL


def pack(w):
    """w (n × k, fp16) as chain.cu reads it: each block's piece contiguous,
    row-major over its k-piece, chunk c of row r at c ^ (r % 8)."""
    n, k = w.shape
    out = []
    for t in range(tiles):
        for s in range(CL):
            n0, n1, k0, k1 = piece(n, k, t, s)
            blk = w[n0 * 8:n1 * 8, k0 * 64:k1 * 64].reshape((n1 - n0) * 8, (k1 - k0) * 8, 8)
            r = torch.arange(blk.shape[0], device=w.device).view(-1, 1)
            c = torch.arange(blk.shape[1], device=w.device).view(1, -1)
            sw = torch.empty_like(blk)
            sw[r, c ^ (r % 8)] = blk
            out.append(sw.reshape(-1))
    return torch.cat(out)


dev = "cuda"
torch.manual_seed(0)
ws = [[(torch.randn(n, k, device=dev) / k ** 0.5).half() for _, k, n in shapes] for _ in range(L)]
packed = [[pack(w) for w in lw] for lw in ws]
x0 = torch.zeros(ROWS, H, device=dev, dtype=torch.half)
x0[:M] = torch.randn(M, H, device=dev).half()
# A y of its own for every GEMM: with DATAFLOW a block may run ahead of
# another reading the y it would overwrite otherwise.
bufs = [[torch.zeros(ROWS, n, device=dev, dtype=torch.half) for _, _, n in shapes] for _ in range(L)]

# Shared memory: GEMMs alternate between two weight slots (so that the
# next one's copy never lands on the weight in use), then two mbarriers,
# then x's piece (the products' buffer after the products).
maxw = [0, 0]
maxx = 0
for gi, (_, k, n) in enumerate(shapes):
    for t in range(tiles):
        for s in range(CL):
            n0, n1, k0, k1 = piece(n, k, t, s)
            maxw[gi % 2] = max(maxw[gi % 2], (n1 - n0) * 8 * (k1 - k0) * 64 * 2)
            maxx = max(maxx, ROWS * (k1 - k0) * 64 * 2)
    assert ((n // 8 + tiles - 1) // tiles + 3) // 4 <= 11, "a warp takes at most 11 n8-tiles"
slot = [0, (maxw[0] + 127) // 128 * 128]
xoff = (slot[1] + maxw[1] + 16 + 127) // 128 * 128
if xoff + maxx > smem:
    raise SystemExit("shared memory: %d bytes needed, %d allowed" % (xoff + maxx, smem))
maxx = (smem - xoff) // 128 * 128  # x's piece, or the products of a round of the adding: all that is left
print(json.dumps({"smem": smem, "slots": maxw, "x": maxx, "tiles": tiles, "cluster": CL, "max_active_clusters": nclusters.value}), flush=True)


def rounds_rows(n):
    """Rows a round of the cluster's adding: the most (dividing 96, a
    multiple of 8) whose products fit in x's piece."""
    ntc = ((n // 8 + tiles - 1) // tiles) * 8
    for rr in (96, 48, 32, 24, 16, 8):
        if rr * (ntc + 4) * 4 <= maxx:
            return rr
    raise SystemExit("products do not fit")


def phases(layers, extra):
    """The phase table: per layer the four GEMMs, each reading the one
    before (qkv's first 1024 columns stand for the attention's output,
    mlp_in's first 2624 for GeGLU's), extra barrier-only phases after qkv
    (1) and after attn_out and mlp_out too (3)."""
    rec = []
    x, ldx = x0, H
    gi = 0
    for l in range(layers):
        for j, (_, k, n) in enumerate(shapes):
            w = packed[l][j]
            y = bufs[l][j]
            rec.append(dict(kind=0, w=w, x=x, ldx=ldx, y=y, ldy=n, k=k, n=n, woff=slot[gi % 2], gi=gi, rr=rounds_rows(n)))
            gi += 1
            x, ldx = y, n
            if (extra >= 1 and j == 0) or (extra >= 3 and j in (1, 3)):
                rec.append(dict(kind=1))
    words = []
    for p, r in enumerate(rec):
        nxt = next((q for q in range(p + 1, len(rec)) if rec[q]["kind"] == 0), -1)
        if r["kind"] == 0:
            ptrs = [r["w"].data_ptr(), r["x"].data_ptr(), r["y"].data_ptr()]
            ints = [r["k"], r["n"], r["ldx"], r["ldy"], r["woff"], r["gi"], nxt, r["rr"], 0, 0]
        else:
            ptrs = [0, 0, 0]
            ints = [0, 0, 0, 0, 0, -1, nxt, 8, 1, 0]
        words.append(torch.tensor(ptrs, dtype=torch.int64).view(torch.int32).tolist() + ints)
    table = torch.tensor(words, dtype=torch.int32, device=dev)
    assert table.shape[1] * 4 == 64
    return table, len(rec)


tables = {e: phases(L, e) for e in (0, 1, 3)}  # the timed chains, by barrier-only phases a layer
ctr = torch.zeros(max(n for _, n in tables.values()) * tiles, dtype=torch.int32, device=dev)  # a counter a (phase, tile)


def run_chain(table, nph, flags):
    ctr.zero_()
    argv = [ctypes.c_void_p(table.data_ptr()), ctypes.c_int(nph), ctypes.c_void_p(ctr.data_ptr()), ctypes.c_int(xoff), ctypes.c_int(flags)]
    ptrs = (ctypes.c_void_p * len(argv))(*[ctypes.cast(ctypes.pointer(a), ctypes.c_void_p) for a in argv])
    c, keep = config(tiles * CL, smem, torch.cuda.current_stream().cuda_stream)
    check(cuda.cuLaunchKernelEx(ctypes.byref(c), fn, ptrs, None), "cuLaunchKernelEx")


# Correctness, one layer: each GEMM against float32 products of the
# operands chain.cu read (its own output of the GEMM before).
table1, n1 = phases(1, 0)
run_chain(table1, n1, 0)
torch.cuda.synchronize()
xin = x0
worst = 0.0
for j, (name, k, n) in enumerate(shapes):
    ref = xin[:, :k].float() @ ws[0][j].float().t()
    got = bufs[0][j].float()
    err = ((got - ref).abs().max() / ref.abs().max()).item()
    worst = max(worst, err)
    print(json.dumps({"check": name, "max_err_rel_to_max": err}), flush=True)
    xin = bufs[0][j]
if not worst < 2e-3:
    raise SystemExit("chain.cu disagrees with the float32 products: %g" % worst)

# The whole chain against cuBLAS's (93 rows), loosely; with DATAFLOW it
# must be the grid-barrier chain's bit for bit (the same products and sums
# in the same order, only the waiting differs).
tableL, nL = tables[0]
run_chain(tableL, nL, 0)
torch.cuda.synchronize()
mine = bufs[L - 1][3][:M].float().clone()
for lb in bufs:  # a read of a y not yet written would find zeros, not the last run's
    for b in lb:
        b.zero_()
run_chain(tableL, nL, 4)
torch.cuda.synchronize()
flow = bufs[L - 1][3][:M].float()
print(json.dumps({"check": "dataflow against the grid barrier", "max_abs_diff": (flow - mine).abs().max().item()}), flush=True)
if not torch.equal(flow, mine):
    raise SystemExit("the dataflow chain differs from the grid-barrier chain")
xc = x0[:M]
for l in range(L):
    for j, (_, k, n) in enumerate(shapes):
        xc = torch.matmul(xc[:, :k], ws[l][j].t())
theirs = xc.float()
print(json.dumps({"check": "chain of %d layers against cuBLAS" % L,
                  "max_err_rel_to_max": ((mine - theirs).abs().max() / theirs.abs().max()).item()}), flush=True)

# Timing.
xs = x0[:M].contiguous()
ys = [torch.empty(M, n, device=dev, dtype=torch.half) for _, _, n in shapes]


def body(mode):
    if mode == "cublas":
        x = xs
        for l in range(L):
            for j, (_, k, n) in enumerate(shapes):
                torch.matmul(x[:, :k], ws[l][j].t(), out=ys[j])
                x = ys[j]
        return
    extra = {"chain": 0, "flow": 0, "flow+l2": 0, "chain+1": 1, "chain+3": 3, "nomma": 0, "floor": 0}[mode]
    flags = {"nomma": 1, "floor": 3, "flow": 4, "flow+l2": 12}.get(mode, 0)
    table, nph = tables[extra]
    run_chain(table, nph, flags)


graphs = cudalib.capture(torch, args.modes.split(","), body)
flush = torch.empty(512 * 1024 * 1024 // 4, device=dev)
for r in range(args.rounds):
    for mode, g in graphs.items():
        ts = cudalib.replay_us(torch, g, args.reps, flush, L)
        print(json.dumps({"gpu": gpu, "mode": mode, "tiles": tiles, "cluster": CL, "round": r, "layers": L, "rows": M, "us_per_layer": round(statistics.median(ts), 3),
                          "min": round(min(ts), 3)}), flush=True)
