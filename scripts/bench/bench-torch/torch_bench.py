"""Times the PyTorch reference forward (scripts/goldens/variants/reference.py's
model: transformers ModernBertModel + torch TransformerEncoderLayer heads,
fp32, sdpa) on a Laya checkpoint: N question rows of T tokens each, one
padded batch, as laya-bench's workload of N questions runs them.

Usage:
    python3 torch_bench.py --model DIR --questions N --tokens T [--threads C]
        [--runs R] [--warmup W]
Prints one JSON object: median/mean/min ms and the samples.
"""

import argparse
import json
import os
import random
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "goldens", "variants"))
import reference  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402


def rows_for(cfg, special, mask_id, questions, tokens, seed=1):
    """questions rows of `tokens` ids: [CLS] body [SEP], with 4, 3 and 2
    [MASK] markers cycling as laya-bench's choice/score/noul templates."""
    rng = random.Random(seed)
    body = [i for i in range(min(cfg.vocab_size, 50000)) if i not in special and i != mask_id]
    out = []
    for q in range(questions):
        k = (4, 3, 2)[q % 3]
        ids = [cfg.cls_token_id] + [rng.choice(body) for _ in range(tokens - 2)] + [cfg.sep_token_id]
        markers = sorted(rng.sample(range(1, tokens - 1), k))
        for p in markers:
            ids[p] = mask_id
        out.append({"input_ids": ids, "markers": markers, "qtype": q % 3})
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--questions", type=int, default=1)
    ap.add_argument("--tokens", type=int, default=93)
    ap.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: leave torch's default)")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    args = ap.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    t0 = time.perf_counter()
    model, cfg, _ = reference.load_model(args.model, "sdpa")
    load_s = time.perf_counter() - t0
    special, mask_id = reference.special_ids(args.model)
    rows = rows_for(cfg, special, mask_id, args.questions, args.tokens)
    batch = reference.collate(rows, cfg.pad_token_id)
    samples = []
    with torch.inference_mode():
        for i in range(args.warmup + args.runs):
            t = time.perf_counter()
            model(*batch)
            if i >= args.warmup:
                samples.append((time.perf_counter() - t) * 1e3)
    print(json.dumps({
        "model": os.path.basename(os.path.normpath(args.model)), "questions": args.questions,
        "tokens_per_row": args.tokens, "threads": torch.get_num_threads(),
        "torch": torch.__version__, "transformers": transformers.__version__,
        "load_s": load_s, "median_ms": statistics.median(samples), "mean_ms": statistics.fmean(samples),
        "min_ms": min(samples), "samples_ms": samples,
    }))


if __name__ == "__main__":
    main()
