#!/usr/bin/env bash
# Our whole forward (laya-bench, end to end) against numpy's BLAS doing the
# model's matrix products alone (blas_bench.py: every encoder and
# decision-head weight as x @ w.T, fp32), on this machine and these cores,
# interleaved ROUNDS times so that both see the same load. Prints a table.
#
# Needs python3 with numpy (Debian: apt-get install python3-numpy
# libopenblas0-pthread; PYTHON=/usr/bin/python3 if another python3 comes
# first on PATH) and laya/laya-bench binaries (BIN, from build.sh).
#
# Usage, from the module root:
#   scripts/bench/bench-torch/build.sh && scripts/bench/bench-torch/blas.sh
# Options (environment):
#   BIN=scripts/bench/bench-torch/bin   WORK=${TMPDIR:-/tmp}/laya-parity   CORES=$(nproc)
#   PRESETS="english multilingual"   QUESTIONS="1 10"   ROUNDS=3   RUNS=5   PYTHON=python3
#   OPENBLAS_CORETYPE=SkylakeX (or Haswell, …) where OpenBLAS does not know the CPU and
#   falls back to generic kernels: the table's last column says which kernels it ran
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=${BIN:-$HERE/bin}
WORK=${WORK:-${TMPDIR:-/tmp}/laya-parity}
CORES=${CORES:-$(nproc)}
PRESETS=${PRESETS:-"english multilingual"}
QUESTIONS=${QUESTIONS:-"1 10"}
ROUNDS=${ROUNDS:-3}
RUNS=${RUNS:-5}
PYTHON=${PYTHON:-python3}
mkdir -p "$WORK"
cpus="0-$((CORES - 1))"
printf '| workload | cores | ours, end to end (P50 ms, per round) | BLAS products alone (median ms, per round) | ours / BLAS | OpenBLAS kernels |\n|---|---:|---|---|---:|---|\n'
for preset in $PRESETS; do
  "$HERE/synth.sh" "$BIN" "$WORK" "$preset"
  for q in $QUESTIONS; do
    ours=() blas=()
    for _ in $(seq "$ROUNDS"); do
      # The P50 and the request's real token count (the BLAS rows).
      read -r o tokens < <(GOMAXPROCS=$CORES taskset -c "$cpus" "$BIN/laya-bench" --model "$WORK/$preset" --questions "$q" \
        --runs "$RUNS" --warmup 2 --format json |
        "$PYTHON" -c 'import json,sys; r=json.load(sys.stdin)["results"][0]; print(r["p50_ms"], r["input_tokens"])')
      read -r b core < <(OPENBLAS_NUM_THREADS=$CORES OMP_NUM_THREADS=$CORES taskset -c "$cpus" "$PYTHON" "$HERE/blas_bench.py" \
        --model "$WORK/$preset" --tokens "$tokens" --questions 1 --runs "$RUNS" --warmup 2 |
        "$PYTHON" -c 'import json,sys; d=json.load(sys.stdin); print(d["median_ms"], d["openblas_core"])')
      ours+=("$o") blas+=("$b")
    done
    "$PYTHON" - "$preset" "$q" "$CORES" "${ours[*]}" "${blas[*]}" "$core" <<'PY'
import statistics, sys
preset, q, cores, ours, blas, core = sys.argv[1:]
o = [float(x) for x in ours.split()]
b = [float(x) for x in blas.split()]
print(f"| {preset}, {q} question(s) | {cores} | {', '.join(f'{x:.1f}' for x in o)} | {', '.join(f'{x:.1f}' for x in b)} | {statistics.median(o) / statistics.median(b):.2f}× | {core} |")
PY
  done
done
