#!/usr/bin/env bash
# Writes the synthetic full-size checkpoint of a preset into WORK/PRESET
# once (run.sh, blas.sh and scripts/goldens/parity/run.sh share it). The
# multilingual one gets the real 256k-entry Gemma tokenizer (mmBERT's family)
# when build.sh fetched it into BIN/tokenizer-multilingual, so that its
# tokenization and loading cost what laya-multilingual's do; otherwise, and
# for english, the bundled ModernBERT tokenizer.
#
# Usage: synth.sh BIN WORK PRESET
set -euo pipefail
BIN=$1 WORK=$2 preset=$3
[ -f "$WORK/$preset/model.safetensors" ] && exit 0
rm -rf "${WORK:?}/${preset:?}"
args=()
if [ "$preset" = multilingual ] && [ -f "$BIN/tokenizer-multilingual/tokenizer.json.gz" ]; then
  tok="$WORK/tokenizer-multilingual"
  mkdir -p "$tok"
  gunzip -c "$BIN/tokenizer-multilingual/tokenizer.json.gz" > "$tok/tokenizer.json"
  cp "$BIN/tokenizer-multilingual/tokenizer_config.json" "$tok/" 2>/dev/null || true
  args=(--tokenizer "$tok")
fi
"$BIN/laya" synth --preset "$preset" --out "$WORK/$preset" "${args[@]}" >&2
