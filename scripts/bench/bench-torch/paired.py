"""Ours against PyTorch, run by run: one laya-bench request (end to end),
then one PyTorch forward of rows of the same token count, then the next
pair in the other order, on the same cores. run.sh alternates whole
processes (RUNS runs of each per round); on a shared host whose speed
drifts by tens of percent between rounds, that leaves the ratio within the
drift. Here every pair sees the same host state, and the ratio is read per
pair: the median of the per-pair ratios with a 95 % bootstrap interval.

laya-bench runs as a child (pacing.py: --paced, one request per line we
send); both sides sleep --gap seconds before each run.

Run it pinned, as paired.sh does:
    OMP_NUM_THREADS=2 GOMAXPROCS=2 taskset -c 0-1 python3 paired.py \\
        --laya-bench bin/laya-bench --model DIR --questions 10 --threads 2 --pairs 12
Prints one JSON object (both sides' samples, the pairs, the ratios).
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "goldens", "variants"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pacing  # noqa: E402
import reference  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from torch_bench import rows_for  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: leave torch's default)")
    args = pacing.parse_args(ap)
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    ours = pacing.Paced(args.laya_bench, args.model, args.questions, args.warmup)
    try:
        model, cfg, _ = reference.load_model(args.model, "sdpa")
        header = ours.header()
        tokens = max(8, round(header["input_tokens"] / args.questions))
        special, mask_id = reference.special_ids(args.model)
        batch = reference.collate(rows_for(cfg, special, mask_id, args.questions, tokens), cfg.pad_token_id)

        def torch_once():
            t = time.perf_counter()
            model(*batch)
            return (time.perf_counter() - t) * 1e3

        with torch.inference_mode():
            pairs = pacing.run_pairs(ours.once, torch_once, args.pairs, args.warmup, args.gap, "PyTorch")
    finally:
        ours.close()

    print(json.dumps({
        "model": os.path.basename(os.path.normpath(args.model)), "questions": args.questions,
        "input_tokens": header["input_tokens"], "tokens_per_row": tokens, "threads": torch.get_num_threads(),
        "torch": torch.__version__, "transformers": transformers.__version__, "gap_s": args.gap,
        **pacing.summary(pairs, "torch"),
    }))


if __name__ == "__main__":
    main()
