#!/usr/bin/env bash
# Full-size parity check, reproducible from the repository: writes the
# synthetic English (ModernBERT-large) and multilingual (mmBERT-base)
# checkpoints with our own `laya synth`, runs the PyTorch reference
# (scripts/goldens/variants/reference.py's model) and our forward on the same rows,
# and prints max |Δlogit| and max |Δact prob| (parity.py).
#
# Needs python3 with torch, transformers, safetensors, numpy; no Go: it uses
# the static binaries that scripts/bench/bench-torch/build.sh puts in BIN.
#
# Usage, from the module root:
#   scripts/bench/bench-torch/build.sh               # on a machine with Go
#   scripts/goldens/parity/run.sh [BIN] [WORK] [OUT]   # on the machine with PyTorch
# Defaults: BIN=scripts/bench/bench-torch/bin, WORK=${TMPDIR:-/tmp}/laya-parity, OUT=WORK/out.
# On a CUDA host, BACKEND=cuda PRECISIONS=fp32,fp16x2 runs ours on the cuda
# backend once per precision (the reduced ones held to the answer gate).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=${1:-$HERE/../../bench/bench-torch/bin}
WORK=${2:-${TMPDIR:-/tmp}/laya-parity}
OUT=${3:-$WORK/out}
mkdir -p "$WORK" "$OUT"
for preset in english multilingual; do
  "$HERE/../../bench/bench-torch/synth.sh" "$BIN" "$WORK" "$preset"
done
python3 "$HERE/parity.py" --bin "$BIN" --out "$OUT" --backend "${BACKEND:-cpu}" --precisions "${PRECISIONS:-}" \
  "$WORK/english" "$WORK/multilingual"
