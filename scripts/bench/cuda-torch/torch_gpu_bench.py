"""PyTorch on a CUDA GPU, timed on the reference Laya model
(scripts/goldens/variants/reference.py: transformers ModernBertModel + torch
TransformerEncoderLayer heads, sdpa), for the side-by-side table of the
cuda backend (run.sh runs both). Rows of 93 tokens, 1, 10 and 50 of them
in one padded batch, as laya-bench's workloads of 1, 10 and 50 questions.

Modes:
  eager32    fp32 weights, eager
  eager16    weights cast to fp16 (act head kept fp32), eager
  graph16    eager16 captured in a CUDA graph and replayed; graph16+io adds
             the input copy in and the outputs' copy back per run
  compile16  torch.compile(mode="reduce-overhead") of eager16

One change makes capture possible, without changing the arithmetic:
transformers' mask helpers are told they are tracing, so they skip their
host-side padding_mask.all() check and always build the mask (the batch's
row index is already made on the model's device by reference.Laya.forward).

Usage: python3 torch_gpu_bench.py CKPT MODES [--rounds R] [--runs N]
Prints one JSON line per (mode, rows, round): median/min/p90 ms.
"""

import argparse
import importlib
import json
import os
import random
import statistics
import sys
import time
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "goldens", "variants"))
import reference as R  # noqa: E402
import torch  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("ckpt")
ap.add_argument("modes")
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--runs", type=int, default=50)
ap.add_argument("--rows", default="1,10,50")
args = ap.parse_args()
preset = os.path.basename(os.path.normpath(args.ckpt))
counts = [int(x) for x in args.rows.split(",")]
torch.manual_seed(0)

model, cfg, agent = R.load_model(args.ckpt, "sdpa")
print(json.dumps({"preset": preset, "torch": torch.__version__, "gpu": torch.cuda.get_device_name(0),
                  "allow_tf32": torch.backends.cuda.matmul.allow_tf32}), flush=True)


def rows(n, length=93):
    rng = random.Random(1)
    out = []
    for i in range(n):
        ids = [cfg.cls_token_id] + [rng.randrange(1000, 30000) for _ in range(length - 2)] + [cfg.sep_token_id]
        out.append({"input_ids": ids, "markers": [5, 9, 13, 17][: (4 if i % 3 == 0 else 3 if i % 3 == 1 else 2)], "qtype": i % 3})
    return out


def batch(n):
    return [x.to("cuda") for x in R.collate(rows(n), cfg.pad_token_id)]


def emit(mode, n, rnd, ts, **kw):
    ts = sorted(ts)
    print(json.dumps({"preset": preset, "mode": mode, "rows": n, "tokens_per_row": 93, "round": rnd,
                      "median_ms": round(statistics.median(ts), 4), "min_ms": round(ts[0], 4),
                      "p90_ms": round(ts[int(0.9 * len(ts))], 4), "runs": len(ts), **kw}), flush=True)


def timed(fn, mode, n, warm=10, **kw):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    for rnd in range(args.rounds):
        ts = []
        for _ in range(args.runs):
            t = time.perf_counter()
            fn()
            torch.cuda.synchronize()
            ts.append((time.perf_counter() - t) * 1e3)
        emit(mode, n, rnd, ts, **kw)


def half_model():
    m = model.to("cuda").half()
    m.act_head.float()  # its input is built in fp32 by the forward
    return m


def tracing():
    for name in ("transformers.masking_utils", "transformers.models.modernbert.modeling_modernbert"):
        mod = importlib.import_module(name)
        if hasattr(mod, "is_tracing"):
            setattr(mod, "is_tracing", lambda *x, **k: True)


with torch.inference_mode():
    for mode in args.modes.split(","):
        try:
            if mode == "eager32":
                m = model.to("cuda").float()
                for n in counts:
                    b = batch(n)
                    timed(lambda: m(*b), mode, n)
            elif mode == "eager16":
                m = half_model()
                for n in counts:
                    b = batch(n)
                    timed(lambda: m(*b), mode, n)
            elif mode == "graph16":
                tracing()
                m = half_model()
                for n in counts:
                    static = batch(n)
                    host = [x.cpu().pin_memory() for x in static]
                    s = torch.cuda.Stream()
                    s.wait_stream(torch.cuda.current_stream())
                    with torch.cuda.stream(s):
                        for _ in range(3):
                            m(*static)
                    torch.cuda.current_stream().wait_stream(s)
                    g = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(g):
                        out = m(*static)

                    def io():
                        for d, h in zip(static, host):
                            d.copy_(h, non_blocking=True)
                        g.replay()
                        return [o.cpu() for o in out]

                    timed(g.replay, mode, n)
                    timed(io, mode + "+io", n)
            elif mode == "compile16":
                m = half_model()
                cm = torch.compile(m, mode="reduce-overhead")
                for n in counts:
                    b = batch(n)
                    t = time.perf_counter()
                    cm(*b)
                    torch.cuda.synchronize()
                    timed(lambda: cm(*b), mode, n, first_call_s=round(time.perf_counter() - t, 1))
            else:
                print(json.dumps({"unknown_mode": mode}), flush=True)
        except Exception as e:  # keep going with the other modes
            print(json.dumps({"preset": preset, "mode": mode, "error": repr(e)[:600]}), flush=True)
            traceback.print_exc()
