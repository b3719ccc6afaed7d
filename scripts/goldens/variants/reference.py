"""Independent forward goldens for the checkpoints of testdata/variants.

Rebuilds each Laya model from torch's and transformers' own modules -- not
from laya-metal's code -- loads model.safetensors strictly under upstream
parameter names, runs random valid token rows and writes their option
logits and act probabilities as goldens.json.

The model follows laya-spec.md section 3 (upstream laya/common.py
DecisionModel at 8ef5b2dd):
  encoder  transformers.ModernBertModel (config from encoder/config.json,
           attn_implementation "sdpa", as upstream's build_model)
  head     torch.nn.TransformerEncoderLayer(d, nhead=max(1, d // 64),
           dim_feedforward=4 d, dropout=0, batch_first=True,
           norm_first=True) x head_layers (ReLU, no final norm), after
           adding type_emb[qtype] to every position
  scorer   LayerNorm -> Linear -> GELU -> Linear at each marker
  act head Linear(d + 4, 256) -> GELU -> Linear(256, n_act) over h[CLS]
           and [top1, top1 - top2, entropy / log k, k / 255] of the
           softmax over the batch's padded marker slots (-1e4 masked)

Before writing anything it reproduces the oracle goldens of tiny-en and
tiny-ml-mlxnames (upstream's own outputs) and stops if they differ.

Usage (from the module root, on a machine with PyTorch and transformers):
    python3 scripts/goldens/variants/reference.py OUTDIR [VARIANT_DIR ...]
Writes OUTDIR/<variant>/goldens.json and OUTDIR/report.json.
"""

import json
import math
import os
import platform
import random
import sys
import zlib

import numpy
import safetensors
import torch
import transformers
from safetensors.torch import load_file
from torch import nn

ORACLE = "testdata/oracle"
ROWS_PER_VARIANT = 30
BATCH_SIZE = 6  # rows per padded batch, as upstream's collate_items pads them
ORACLE_LOGIT_TOL = 1e-4
ORACLE_PROB_TOL = 1e-5


def canonical_name(name):
    """Maps a laya-mlx parameter name back to upstream's (inverse of
    laya-mlx sanitize_weights, laya-spec section 1.6)."""
    name = name.replace(".in_proj.weight", ".in_proj_weight").replace(".in_proj.bias", ".in_proj_bias")
    for prefix in ("scorer", "act_head"):
        if name.startswith(prefix + ".layers."):
            name = prefix + "." + name[len(prefix + ".layers."):]
    return name


class Head(nn.Module):
    """Holds the TransformerEncoderLayers under upstream's names
    (head.layers.N.*)."""

    def __init__(self, d, layers):
        super().__init__()
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(d, nhead=max(1, d // 64), dim_feedforward=4 * d, dropout=0.0,
                                       batch_first=True, norm_first=True)
            for _ in range(layers))


class Laya(nn.Module):
    def __init__(self, enc_config, head_layers, n_act, attn_implementation):
        super().__init__()
        d = enc_config.hidden_size
        self.encoder = transformers.AutoModel.from_config(enc_config, attn_implementation=attn_implementation)
        self.head = Head(d, head_layers)
        self.type_emb = nn.Embedding(3, d)
        self.scorer = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, d), nn.GELU(), nn.Linear(d, 1))
        self.act_head = nn.Sequential(nn.Linear(d + 4, 256), nn.GELU(), nn.Linear(256, n_act))
        self.register_buffer("temperature", torch.ones(3))

    def forward(self, input_ids, attention_mask, marker_pos, marker_mask, qtype):
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        hidden = hidden + self.type_emb(qtype)[:, None, :]
        pad = ~attention_mask.bool()
        for layer in self.head.layers:
            hidden = layer(hidden, src_key_padding_mask=pad)
        # On the hidden states' device: a CPU index would make a CUDA run copy it
        # across on every call, which CUDA graph capture refuses.
        rows = torch.arange(hidden.shape[0], device=hidden.device)[:, None]
        markers = hidden[rows, marker_pos]
        logits = self.scorer(markers).squeeze(-1).float()
        logits = logits.masked_fill(~marker_mask, -1e4)
        p = torch.softmax(logits, dim=-1)
        k = marker_mask.sum(-1).clamp(min=2).float()
        ent = -(p * torch.log(p.clamp(min=1e-9))).sum(-1) / torch.log(k)
        if p.shape[1] >= 2:
            top = torch.topk(p, 2, dim=-1).values
        else:  # one slot in the whole batch: the second is a padded 0
            top = torch.cat([p, torch.zeros_like(p)], dim=-1)
        feats = torch.stack([top[:, 0], top[:, 0] - top[:, 1], ent, k / 255.0], dim=-1)
        act_logits = self.act_head(torch.cat([hidden[:, 0, :].float(), feats], dim=-1))
        return logits, act_logits, torch.softmax(act_logits, dim=-1)


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def load_model(ckpt_dir, attn_implementation="sdpa"):
    agent = read_json(os.path.join(ckpt_dir, "rl_agent_config.json"))
    enc_config = transformers.AutoConfig.from_pretrained(os.path.join(ckpt_dir, "encoder"))
    n_act = 1 + len(agent.get("act_costs") or {"escalate": 0.5})
    model = Laya(enc_config, int(agent.get("head_layers", 2)), n_act, attn_implementation)
    state = {canonical_name(k): v for k, v in load_file(os.path.join(ckpt_dir, "model.safetensors")).items()}
    model.load_state_dict(state, strict=True)
    model.eval()
    return model, enc_config, agent


def collate(rows, pad_id):
    """Right-pads a batch like upstream's collate_items."""
    length = max(len(r["input_ids"]) for r in rows)
    kmax = max(len(r["markers"]) for r in rows)
    ids = torch.full((len(rows), length), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), length), dtype=torch.long)
    marker_pos = torch.zeros((len(rows), kmax), dtype=torch.long)
    marker_mask = torch.zeros((len(rows), kmax), dtype=torch.bool)
    for b, r in enumerate(rows):
        ids[b, :len(r["input_ids"])] = torch.tensor(r["input_ids"])
        mask[b, :len(r["input_ids"])] = 1
        marker_pos[b, :len(r["markers"])] = torch.tensor(r["markers"])
        marker_mask[b, :len(r["markers"])] = True
    qtype = torch.tensor([r["qtype"] for r in rows], dtype=torch.long)
    return ids, mask, marker_pos, marker_mask, qtype


@torch.no_grad()
def run_batch(model, rows, pad_id):
    logits, act_logits, act_probs = model(*collate(rows, pad_id))
    out = []
    for b, r in enumerate(rows):
        k = len(r["markers"])
        out.append({
            "logits": [float(x) for x in logits[b, :k].tolist()],
            "act_logits": [float(x) for x in act_logits[b].tolist()],
            "act_probs": [float(x) for x in act_probs[b].tolist()],
        })
    return out


def max_diff(got, want):
    return max((abs(a - b) for a, b in zip(got, want)), default=0.0)


def check_oracle(name, golden):
    """Runs every oracle golden row (each case as one padded batch, as
    upstream's predict does) and returns the largest differences."""
    model, cfg, _ = load_model(os.path.join(ORACLE, "checkpoints", name))
    cases = read_json(os.path.join(ORACLE, "goldens", golden, "cases.json"))["cases"]
    worst = {"logits": 0.0, "act_probs": 0.0, "rows": 0}
    for case in cases:
        rows = case["rows"]
        if not rows:
            continue
        for got, want in zip(run_batch(model, rows, cfg.pad_token_id), rows):
            worst["logits"] = max(worst["logits"], max_diff(got["logits"], want["logits"]))
            worst["act_probs"] = max(worst["act_probs"], max_diff(got["act_probs"], want["act_probs"]))
            worst["rows"] += 1
    return worst


def special_ids(ckpt_dir):
    tok = read_json(os.path.join(ckpt_dir, "tokenizer", "tokenizer.json"))
    special = {t["id"] for t in tok.get("added_tokens", []) if t.get("special")}
    mask = [t["id"] for t in tok.get("added_tokens", []) if t["content"] in ("[MASK]", "<mask>")]
    if len(mask) != 1:
        raise SystemExit("%s: no unique mask token" % ckpt_dir)
    return special, mask[0]


def make_rows(name, cfg, agent, special, mask_id):
    """Random valid rows: [CLS] ... [SEP], one [MASK] per option, lengths
    from 5 to 200 (within max_len), all three question types, 1 to 12
    options. Seeded by the variant name, so reruns give the same rows."""
    rng = random.Random(zlib.crc32(name.encode()))
    max_len = min(int(agent.get("max_len", 512)), cfg.max_position_embeddings, 200)
    body = [i for i in range(cfg.vocab_size) if i not in special and i != mask_id]
    lengths = [5, max_len, 6, max_len - 1] + [rng.randint(5, max_len) for _ in range(ROWS_PER_VARIANT - 4)]
    rows = []
    for i, length in enumerate(lengths):
        qtype = i % 3
        room = length - 2  # positions 1 .. length-2 can hold a marker
        if qtype == 0:
            k = rng.randint(1, min(12, room)) if i % 5 else 1
        elif qtype == 1:
            k = rng.randint(min(3, room), min(5, room))
        else:
            k = 2
        ids = [cfg.cls_token_id] + [rng.choice(body) for _ in range(length - 2)] + [cfg.sep_token_id]
        markers = sorted(rng.sample(range(1, length - 1), k))
        for p in markers:
            ids[p] = mask_id
        rows.append({"input_ids": ids, "markers": markers, "qtype": qtype})
    return rows


def rope_thetas(model, cfg):
    """The RoPE bases transformers actually uses, read back from its
    inverse-frequency buffers: inv_freq[1] = theta^(-2 / head_dim)."""
    head_dim = cfg.hidden_size // cfg.num_attention_heads
    out = {}
    for name, buf in model.encoder.named_buffers():
        if "inv_freq" in name and buf.numel() > 1:
            out[name] = float(buf[1].double() ** (-head_dim / 2.0))
    return out


def variant_goldens(ckpt_dir):
    name = os.path.basename(os.path.normpath(ckpt_dir))
    model, cfg, agent = load_model(ckpt_dir, "sdpa")
    eager, _, _ = load_model(ckpt_dir, "eager")
    special, mask_id = special_ids(ckpt_dir)
    rows = make_rows(name, cfg, agent, special, mask_id)
    eager_diff = 0.0
    for start in range(0, len(rows), BATCH_SIZE):
        batch = rows[start:start + BATCH_SIZE]
        for r, got, other in zip(batch, run_batch(model, batch, cfg.pad_token_id),
                                 run_batch(eager, batch, cfg.pad_token_id)):
            r.update(got)
            eager_diff = max(eager_diff, max_diff(got["logits"], other["logits"]))
    d = cfg.hidden_size
    return name, {
        "variant": name,
        "about": "Forward goldens from torch/transformers modules (scripts/goldens/variants/reference.py), "
                 "CPU FP32, attn_implementation sdpa; rows run in padded batches of batch_size.",
        "as_read_by_transformers": {
            "layer_types": list(getattr(cfg, "layer_types", None) or []),
            "rope_parameters": getattr(cfg, "rope_parameters", None),
            "rope_theta_from_inv_freq": rope_thetas(model, cfg),
            "local_attention": cfg.local_attention,
            "head_attention_heads": model.head.layers[0].self_attn.num_heads,
            "head_attention_head_dim": model.head.layers[0].self_attn.head_dim,
            "head_layers": len(model.head.layers),
            "n_act": model.act_head[2].out_features,
            "pad_token_id": cfg.pad_token_id,
            "hidden_size": d,
        },
        "sdpa_vs_eager_max_logit_diff": eager_diff,
        "batch_size": BATCH_SIZE,
        "rows": rows,
    }


def main():
    out_dir = sys.argv[1]
    variant_dirs = sys.argv[2:]
    torch.manual_seed(0)
    versions = {
        "python": platform.python_version(), "torch": torch.__version__,
        "transformers": transformers.__version__, "safetensors": safetensors.__version__,
        "numpy": numpy.__version__, "threads": torch.get_num_threads(),
    }
    # tiny-ml-mlxnames has tiny-ml's goldens (oracle README: outputs identical).
    oracle = {name: check_oracle(name, golden) for name, golden in (("tiny-en", "tiny-en"), ("tiny-ml-mlxnames", "tiny-ml"))}
    report = {"versions": versions, "oracle_check": oracle}
    print(json.dumps(report, indent=1), flush=True)
    for name, worst in oracle.items():
        if worst["rows"] == 0 or worst["logits"] > ORACLE_LOGIT_TOL or worst["act_probs"] > ORACLE_PROB_TOL:
            raise SystemExit("reference does not reproduce oracle %s: %s" % (name, worst))
    for ckpt_dir in variant_dirs:
        name, golden = variant_goldens(ckpt_dir)
        golden["versions"] = versions
        golden["oracle_check"] = oracle
        os.makedirs(os.path.join(out_dir, name), exist_ok=True)
        with open(os.path.join(out_dir, name, "goldens.json"), "w", encoding="utf-8") as f:
            json.dump(golden, f, indent=1)
            f.write("\n")
        report[name] = {"as_read_by_transformers": golden["as_read_by_transformers"],
                        "sdpa_vs_eager_max_logit_diff": golden["sdpa_vs_eager_max_logit_diff"]}
        print(name, json.dumps(report[name]), flush=True)
    with open(os.path.join(out_dir, "report.json"), "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
