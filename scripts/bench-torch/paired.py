"""Ours against PyTorch, run by run: one laya-bench request (end to end),
then one PyTorch forward of rows of the same token count, then the next
pair in the other order, on the same cores. run.sh alternates whole
processes (RUNS runs of each per round); on a shared host whose speed
drifts by tens of percent between rounds, that leaves the ratio within the
drift. Here every pair sees the same host state, and the ratio is read per
pair: the median of the per-pair ratios with a 95 % bootstrap interval.

laya-bench runs as a child (--paced: it loads and warms up, reports its
request's token count, then times one request per line we send). Both
sides sleep --gap seconds before each run so that the other's idle threads
(OpenMP's and our pool's spin-waits) have stopped polling.

Run it pinned, as paired.sh does:
    OMP_NUM_THREADS=2 GOMAXPROCS=2 taskset -c 0-1 python3 paired.py \\
        --laya-bench bin/laya-bench --model DIR --questions 10 --threads 2 --pairs 12
Prints one JSON object (both sides' samples, the pairs, the ratios).
"""

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "variants"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from torch_bench import rows_for  # noqa: E402


def bootstrap_median(xs, reps=4000, seed=7):
    """95 % percentile-bootstrap interval of the median of xs."""
    rng = random.Random(seed)
    meds = sorted(statistics.median(rng.choices(xs, k=len(xs))) for _ in range(reps))
    return meds[int(0.025 * reps)], meds[int(0.975 * reps) - 1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--laya-bench", required=True, help="the laya-bench binary")
    ap.add_argument("--model", required=True)
    ap.add_argument("--questions", type=int, default=1)
    ap.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: leave torch's default)")
    ap.add_argument("--pairs", type=int, default=12)
    ap.add_argument("--warmup", type=int, default=3, help="untimed runs of each side before the pairs")
    ap.add_argument("--gap", type=float, default=0.3, help="seconds of sleep before each timed run")
    args = ap.parse_args()
    if args.pairs < 2:
        ap.error("--pairs must be at least 2")
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    ours = subprocess.Popen(
        [args.laya_bench, "--model", args.model, "--questions", str(args.questions),
         "--warmup", str(max(1, args.warmup)), "--paced"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)

    def ours_once():
        ours.stdin.write("go\n")
        ours.stdin.flush()
        line = ours.stdout.readline()
        if not line:
            sys.exit("paired.py: laya-bench ended early (see its stderr above)")
        return json.loads(line)["ms"]

    try:
        model, cfg, _ = reference.load_model(args.model, "sdpa")
        line = ours.stdout.readline()
        if not line:
            sys.exit("paired.py: laya-bench ended before its header (see its stderr above)")
        header = json.loads(line)
        tokens = max(8, round(header["input_tokens"] / args.questions))
        special, mask_id = reference.special_ids(args.model)
        batch = reference.collate(rows_for(cfg, special, mask_id, args.questions, tokens), cfg.pad_token_id)

        def torch_once():
            t = time.perf_counter()
            model(*batch)
            return (time.perf_counter() - t) * 1e3

        pairs = []
        with torch.inference_mode():
            for _ in range(args.warmup):
                torch_once()
            for i in range(args.pairs):
                # Alternate which side goes first: a drift within a pair
                # then favours neither.
                order = ("ours", "torch") if i % 2 == 0 else ("torch", "ours")
                got = {}
                for side in order:
                    time.sleep(args.gap)
                    got[side] = ours_once() if side == "ours" else torch_once()
                pairs.append((got["ours"], got["torch"]))
                print("   pair %d: ours %.1f ms, PyTorch %.1f ms, %.3fx" % (i + 1, got["ours"], got["torch"],
                      got["ours"] / got["torch"]), file=sys.stderr, flush=True)
        ours.stdin.write("quit\n")
        ours.stdin.flush()
    finally:
        try:
            ours.stdin.close()
        except BrokenPipeError:
            pass
        ours.wait(timeout=60)

    o = [p[0] for p in pairs]
    t = [p[1] for p in pairs]
    ratios = [a / b for a, b in pairs]
    lo, hi = bootstrap_median(ratios)
    print(json.dumps({
        "model": os.path.basename(os.path.normpath(args.model)), "questions": args.questions,
        "input_tokens": header["input_tokens"], "tokens_per_row": tokens, "threads": torch.get_num_threads(),
        "torch": torch.__version__, "transformers": transformers.__version__,
        "pairs": len(pairs), "gap_s": args.gap,
        "ours_median_ms": statistics.median(o), "torch_median_ms": statistics.median(t),
        "ratio_of_medians": statistics.median(o) / statistics.median(t),
        "median_pair_ratio": statistics.median(ratios), "ci95": [lo, hi],
        "pairs_ours_faster": sum(r < 1 for r in ratios),
        "ours_ms": o, "torch_ms": t,
    }))


if __name__ == "__main__":
    main()
