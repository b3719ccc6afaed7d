#!/usr/bin/env python3
"""Whether a batch of questions runs faster as independent branches of one
CUDA graph than as one chain: the encoder of the English model's shapes
(ModernBERT-large: 28 layers of LayerNorm, qkv, attention, output, residual,
LayerNorm, GeGLU MLP, residual; fp16, no RoPE or windows) on Q questions of
T tokens, in PyTorch, captured once as one chain over the whole batch and
once with the questions split into B groups, each group's 28 layers on a
stream of its own (so the graph has B independent chains the GPU may run
side by side), and the graphs' replays timed. The questions never mix in an
encoder (attention stays within a question's rows), so the split changes no
output; the script checks that too.

What it says is PyTorch's kernels' overlap, not the cuda backend's: a guide
to whether the backend's graphs would gain from branches, not its timing.

  python3 scripts/bench/branches/branches.py --questions 10,50 --branches 1,2,3,4

One JSON line a (questions, branches, round): ms a forward, the median of
--reps replays' mean over --rounds rounds.
"""

import argparse
import json
import statistics

import torch
import torch.nn.functional as F

ap = argparse.ArgumentParser()
ap.add_argument("--questions", default="10,50")
ap.add_argument("--tokens", type=int, default=93)
ap.add_argument("--branches", default="1,2,3,4")
ap.add_argument("--layers", type=int, default=28)
ap.add_argument("--hidden", type=int, default=1024)
ap.add_argument("--inter", type=int, default=2624)
ap.add_argument("--heads", type=int, default=16)
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--reps", type=int, default=20)
args = ap.parse_args()

dev, dt = "cuda", torch.float16
H, I, NH, T = args.hidden, args.inter, args.heads, args.tokens
DH = H // NH
gen = torch.Generator(device=dev).manual_seed(0)


def rand(*shape, scale=0.02):
    return torch.randn(*shape, device=dev, dtype=dt, generator=gen) * scale


# Distinct weights a layer, as the model's: each GEMM reads its own from HBM.
layers = [
    dict(ln1=1 + rand(H, scale=0.1), qkv=rand(3 * H, H), o=rand(H, H), ln2=1 + rand(H, scale=0.1), wi=rand(2 * I, H), wo=rand(H, I))
    for _ in range(args.layers)
]


def forward(x, nq):
    for p in layers:
        h = F.layer_norm(x, (H,), p["ln1"], None, 1e-5)
        q, k, v = (h @ p["qkv"].t()).view(nq, T, 3, NH, DH).unbind(2)
        a = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
        x = torch.addmm(x, a.transpose(1, 2).reshape(nq * T, H), p["o"].t())
        h = F.layer_norm(x, (H,), p["ln2"], None, 1e-5)
        gate, up = (h @ p["wi"].t()).chunk(2, dim=-1)
        x = torch.addmm(x, F.gelu(gate) * up, p["wo"].t())
    return x


def groups(nq, b):
    return [nq // b + (1 if i < nq % b else 0) for i in range(b) if nq // b + (1 if i < nq % b else 0) > 0]


def capture(x, nq, b):
    """A graph of forward over x's questions in b groups, a stream each,
    and the list its outputs will be in."""
    sizes = groups(nq, b)
    parts = list(torch.split(x, [s * T for s in sizes]))
    streams = [torch.cuda.Stream() for _ in sizes]
    outs = [None] * len(sizes)
    for i, s in enumerate(streams):  # warm-up: cuBLAS's handles and workspaces a stream
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            forward(parts[i], sizes[i])
        torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        cap = torch.cuda.current_stream()
        for i, s in enumerate(streams):
            s.wait_stream(cap)
            with torch.cuda.stream(s):
                outs[i] = forward(parts[i], sizes[i])
        for s in streams:
            cap.wait_stream(s)
    return g, outs


def replay_ms(g, reps):
    g.replay()
    torch.cuda.synchronize()
    a, z = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(reps):
        g.replay()
    z.record()
    z.synchronize()
    return a.elapsed_time(z) / reps


name = torch.cuda.get_device_name()
for nq in [int(s) for s in args.questions.split(",")]:
    x = rand(nq * T, H, scale=1.0)
    graphs, ref = {}, None
    for b in [int(s) for s in args.branches.split(",")]:
        if b > nq:
            continue
        g, outs = capture(x, nq, b)
        g.replay()
        torch.cuda.synchronize()
        y = torch.cat(outs)
        if ref is None:
            ref = y.clone()
        # Same kernels on fewer rows may pick other GEMM algorithms, so
        # the outputs agree within fp16's rounding, not bit for bit.
        err = ((y.float() - ref.float()).abs().max() / ref.float().abs().max()).item()
        print(json.dumps({"gpu": name, "check": "branches against one chain", "questions": nq, "branches": b, "max_rel_diff": err}), flush=True)
        if err > 2e-2:
            raise SystemExit("branches=%d: outputs differ from the one chain's by %.3g" % (b, err))
        graphs[b] = g
    for r in range(args.rounds):
        for b, g in graphs.items():
            ms = statistics.median(replay_ms(g, args.reps) for _ in range(5))
            print(json.dumps({"gpu": name, "questions": nq, "tokens": T, "branches": b, "round": r + 1, "ms": round(ms, 4)}), flush=True)
    del graphs
