"""Full-size parity: laya-metal's forward against the PyTorch reference.

For each checkpoint directory (synthetic full-size checkpoints written by
`laya synth`, see run.sh) it draws the random valid token rows of
scripts/goldens/variants/reference.py (lengths 5..200, all question types, 1..12
options), runs them through the PyTorch model that reference.py builds from
torch's and transformers' own modules (after checking that model against the
upstream oracle goldens of tiny-en), runs the same rows through our forward
(the static `parity` binary, scripts/goldens/parity/main.go, on --backend, the
same batches laid out as the library lays them), and reports max |delta logit|
and max |delta act prob|.

Usage (from the module root, on a machine with PyTorch and transformers):
    python3 scripts/goldens/parity/parity.py --bin BIN_DIR --out OUT_DIR CKPT_DIR ...
Writes OUT_DIR/parity.json; exits 1 when a gate fails: logits 1e-4 and act
probs 1e-5 (float32), or, for a reduced precision of the cuda backend
(--backend cuda --precisions fp32,fp16x2: one run of ours per precision,
LAYA_CUDA=precision=P), the same answer (argmax of the option logits) for
every row and act probs within 0.005.
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "variants"))
import reference  # noqa: E402  (scripts/goldens/variants/reference.py)
import torch  # noqa: E402
import transformers  # noqa: E402

LOGIT_GATE = 1e-4
ACT_GATE = 1e-5
REDUCED_ACT_GATE = 5e-3


def argmax(v):
    return max(range(len(v)), key=lambda i: v[i])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True, help="directory holding the static parity binary")
    ap.add_argument("--out", required=True)
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--precisions", default="",
                    help="comma-separated cuda precisions, one run of ours each (LAYA_CUDA=precision=P)")
    ap.add_argument("checkpoints", nargs="+")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(0)
    report = {
        "versions": {"python": platform.python_version(), "torch": torch.__version__,
                     "transformers": transformers.__version__, "threads": torch.get_num_threads()},
        "machine": platform.machine(), "processor": platform.processor(), "cpus": os.cpu_count(),
        "oracle_check": reference.check_oracle("tiny-en", "tiny-en"),
        "gates": {"logits": LOGIT_GATE, "act_probs": ACT_GATE},
        "checkpoints": {},
    }
    oc = report["oracle_check"]
    if oc["rows"] == 0 or oc["logits"] > reference.ORACLE_LOGIT_TOL or oc["act_probs"] > reference.ORACLE_PROB_TOL:
        raise SystemExit("the PyTorch reference does not reproduce the tiny-en oracle: %s" % oc)
    ok = True
    for ckpt in args.checkpoints:
        name = os.path.basename(os.path.normpath(ckpt))
        model, cfg, agent = reference.load_model(ckpt, "sdpa")
        special, mask_id = reference.special_ids(ckpt)
        rows = reference.make_rows(name, cfg, agent, special, mask_id)
        rows_path = os.path.join(args.out, name + "-rows.json")
        with open(rows_path, "w") as f:
            json.dump({"rows": rows}, f)
        t0 = time.time()
        want = []
        for start in range(0, len(rows), reference.BATCH_SIZE):
            want += reference.run_batch(model, rows[start:start + reference.BATCH_SIZE], cfg.pad_token_id)
        torch_s = time.time() - t0
        for prec in args.precisions.split(",") if args.precisions else [""]:
            env = dict(os.environ)
            if prec:
                # Last wins in LAYA_CUDA: other options the caller set stay.
                env["LAYA_CUDA"] = ",".join(o for o in (os.environ.get("LAYA_CUDA", ""), "precision=" + prec) if o)
            t0 = time.time()
            res = subprocess.run([os.path.join(args.bin, "parity"), "--model", ckpt, "--rows", rows_path,
                                  "--backend", args.backend, "--batch", str(reference.BATCH_SIZE)],
                                 check=True, capture_output=True, text=True, env=env)
            ours_s = time.time() - t0
            got = json.loads(res.stdout)["rows"]
            d_logit = max(reference.max_diff(g["logits"], w["logits"]) for g, w in zip(got, want))
            d_act = max(reference.max_diff(g["act_probs"], w["act_probs"]) for g, w in zip(got, want))
            same = sum(argmax(g["logits"]) == argmax(w["logits"]) for g, w in zip(got, want))
            lens = [len(r["input_ids"]) for r in rows]
            # The cuda backend's own default (no precision given) is fp16x2.
            reduced = prec not in ("", "fp32") or (prec == "" and args.backend == "cuda")
            entry = {"rows": len(rows), "tokens_min": min(lens), "tokens_max": max(lens),
                     "batch_size": reference.BATCH_SIZE, "backend": args.backend, "precision": prec or "default",
                     "max_abs_logit_diff": d_logit, "max_abs_act_prob_diff": d_act, "same_answer": same,
                     "gate": "same answers, act probs within 0.005" if reduced else "logits 1e-4, act probs 1e-5",
                     "pass": (same == len(rows) and d_act <= REDUCED_ACT_GATE) if reduced
                     else (d_logit <= LOGIT_GATE and d_act <= ACT_GATE),
                     "torch_s": round(torch_s, 2), "ours_s_including_load": round(ours_s, 2),
                     "hidden_size": cfg.hidden_size, "layers": cfg.num_hidden_layers}
            ok = ok and entry["pass"]
            report["checkpoints"][name + ("/" + prec if prec else "")] = entry
            print(name, json.dumps(entry), flush=True)
        del model
    with open(os.path.join(args.out, "parity.json"), "w") as f:
        json.dump(report, f, indent=1)
        f.write("\n")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
