#!/usr/bin/env bash
# Ours (laya-bench, end to end: validation, tokenization, forward, answer
# JSON) against PyTorch's forward alone (torch_bench.py, the model of
# scripts/goldens/variants/reference.py) on the same synthetic full-size checkpoints
# and the same machine, pinned to the same cores: taskset + GOMAXPROCS for
# ours, taskset + torch.set_num_threads for PyTorch. Prints the ratio table.
#
# Needs python3 with torch, transformers, safetensors, numpy, and taskset; no
# Go: take the static binaries of build.sh along (BIN).
#
# Usage, from the module root:
#   scripts/bench/bench-torch/build.sh                 # on a machine with Go
#   scripts/bench/bench-torch/run.sh [options]         # on the machine with PyTorch
# Options (environment):
#   BIN=scripts/bench/bench-torch/bin   WORK=${TMPDIR:-/tmp}/laya-parity   OUT=$WORK/bench
#   CORES="2 all"   PRESETS="english multilingual"   QUESTIONS="1 10"   RUNS=10   WARMUP=3   ROUNDS=1
# ROUNDS > 1 alternates ours and PyTorch that many times per workload (each
# round RUNS timed runs of each) and pools the samples: on a shared host
# whose speed drifts, both then see the same drift.
# Example:
#   CORES="2 16" RUNS=20 scripts/bench/bench-torch/run.sh
set -euo pipefail
RUNS=${RUNS:-10}
WARMUP=${WARMUP:-3}
ROUNDS=${ROUNDS:-1}
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"
qlist=$(echo "$QUESTIONS" | tr ' ' ',')
for cores in $CORES; do
  [ "$cores" = all ] && cores=$ALL
  cpus="0-$((cores - 1))"
  for preset in $PRESETS; do
    echo "== $preset, $cores cores (taskset -c $cpus)" >&2
    for round in $(seq "$ROUNDS"); do
      sfx=""
      [ "$ROUNDS" -gt 1 ] && sfx="-r$round"
      GOMAXPROCS=$cores taskset -c "$cpus" "$BIN/laya-bench" --model "$WORK/$preset" --questions "$qlist" \
        --runs "$RUNS" --warmup "$WARMUP" --format json > "$OUT/ours-$preset-$cores$sfx.json"
      for q in $QUESTIONS; do
        # Rows of the length laya-bench's request tokenised to (input_tokens / questions).
        tokens=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); r=[x for x in d['results'] if x['questions']==$q][0]; print(max(8, round(r['input_tokens']/$q)))" "$OUT/ours-$preset-$cores$sfx.json")
        OMP_NUM_THREADS=$cores taskset -c "$cpus" python3 "$HERE/torch_bench.py" --model "$WORK/$preset" --questions "$q" \
          --tokens "$tokens" --threads "$cores" --runs "$RUNS" --warmup "$WARMUP" > "$OUT/torch-$preset-$cores-q$q$sfx.json"
        # Each ratio as soon as both sides are measured, on stderr: a run
        # cut short (a per-call time limit) still shows what it measured.
        python3 -c "import json,statistics,sys; o=[x for x in json.load(open(sys.argv[1]))['results'] if x['questions']==$q][0]; t=json.load(open(sys.argv[2])); m=statistics.median(o['samples_ms']); print('   %s, %s cores, %d question(s)%s: ours %.1f ms, PyTorch %.1f ms, %.2fx' % (sys.argv[3], sys.argv[4], $q, sys.argv[5], m, t['median_ms'], m/t['median_ms']))" \
          "$OUT/ours-$preset-$cores$sfx.json" "$OUT/torch-$preset-$cores-q$q$sfx.json" "$preset" "$cores" "${sfx:+ (round ${sfx#-r})}" >&2
      done
    done
  done
done
{ echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $ALL CPUs; $(python3 -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)')"; echo; python3 "$HERE/summarize.py" "$OUT"; } | tee "$OUT/table.md"
