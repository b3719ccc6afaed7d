#!/usr/bin/env bash
# Ours against PyTorch pair by pair (paired.py): per workload, PAIRS pairs of
# one laya-bench request (end to end) and one PyTorch forward (rows of the
# same token count), alternating which goes first, on the same pinned cores.
# Prints, per workload, both medians and the median per-pair ratio with its
# 95 % bootstrap interval; writes paired-*.json and paired.md under OUT. The
# table also lists the cells earlier calls left in OUT, marked "earlier call"
# with their time. Every call also records itself in OUT/run.json (date,
# commit of the binaries, machine, command): with
# OUT=benchmarks/results/DATE-COMMIT the folder is a run that
# `go run ./scripts/bench/benchtables` turns into BENCHMARKS.md's tables.
#
# Needs what run.sh needs (python3 with torch, transformers, safetensors,
# numpy; taskset; build.sh's static binaries in BIN), no Go.
#
# REFERENCE=blas pairs ours with numpy's BLAS doing the model's matrix
# products alone instead (blas_paired.py: BENCHMARKS.md's BLAS comparison;
# needs only numpy, and OPENBLAS_CORETYPE where OpenBLAS does not know the
# CPU, as blas.sh says); it writes blaspaired-*.json and blaspaired.md.
#
# Usage, from the module root:
#   scripts/bench/bench-torch/build.sh                    # on a machine with Go
#   CORES=2 QUESTIONS=10 scripts/bench/bench-torch/paired.sh
# Options (environment):
#   BIN=scripts/bench/bench-torch/bin   WORK=${TMPDIR:-/tmp}/laya-parity   OUT=$WORK/bench
#   CORES="2 all"   PRESETS="english multilingual"   QUESTIONS="1 10"   PAIRS=12   WARMUP=2   GAP=0.3
#   REFERENCE=torch (or blas)   PYTHON=python3
# Example (the development machine's OpenBLAS comparison):
#   REFERENCE=blas CORES=2 QUESTIONS=10 PAIRS=30 OPENBLAS_CORETYPE=SkylakeX scripts/bench/bench-torch/paired.sh
set -euo pipefail
PAIRS=${PAIRS:-12}
REFERENCE=${REFERENCE:-torch}
PYTHON=${PYTHON:-python3}
case $REFERENCE in
  torch) script=paired.py prefix=paired label="PyTorch, forward only" ;;
  blas) script=blas_paired.py prefix=blaspaired label="BLAS products alone" ;;
  *) echo "paired.sh: REFERENCE must be torch or blas, not $REFERENCE" >&2; exit 2 ;;
esac
WARMUP=${WARMUP:-2}
GAP=${GAP:-0.3}
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"
written=()
for cores in $CORES; do
  [ "$cores" = all ] && cores=$ALL
  cpus="0-$((cores - 1))"
  for preset in $PRESETS; do
    for q in $QUESTIONS; do
      echo "== $preset, $q question(s), $cores cores (taskset -c $cpus), $PAIRS pairs" >&2
      f="$OUT/$prefix-$preset-$cores-q$q.json"
      args=(--laya-bench "$BIN/laya-bench" --model "$WORK/$preset" --questions "$q" --pairs "$PAIRS" --warmup "$WARMUP" --gap "$GAP")
      [ "$REFERENCE" = torch ] && args+=(--threads "$cores")
      GOMAXPROCS=$cores OMP_NUM_THREADS=$cores OPENBLAS_NUM_THREADS=$cores taskset -c "$cpus" "$PYTHON" "$HERE/$script" \
        "${args[@]}" > "$f.tmp"
      mv "$f.tmp" "$f"
      written+=("$(basename "$f")")
      "$PYTHON" -c "import json,sys; d=json.load(open(sys.argv[1])); r=sys.argv[2]; print('   ours %.1f ms, %s %.1f ms; per pair %.3fx (95%% CI %.3f-%.3f), ours faster in %d of %d' % (d['ours_median_ms'], r, d[r+'_median_ms'], d['median_pair_ratio'], d['ci95'][0], d['ci95'][1], d['pairs_ours_faster'], d['pairs']))" "$f" "$REFERENCE" >&2
    done
  done
done
# run.json: what a results folder says about the run (benchtables reads it).
"$PYTHON" - "$OUT/run.json" "$BIN" "REFERENCE=$REFERENCE CORES=\"$CORES\" PRESETS=\"$PRESETS\" QUESTIONS=\"$QUESTIONS\" PAIRS=$PAIRS WARMUP=$WARMUP GAP=$GAP scripts/bench/bench-torch/paired.sh" <<'PY'
import json, os, platform, sys, time
path, bin_dir, command = sys.argv[1:4]
run = json.load(open(path)) if os.path.exists(path) else {}
try:
    commit = open(os.path.join(bin_dir, "COMMIT")).read().strip()
except OSError:
    commit = "unknown"
model = platform.processor() or platform.machine()
try:
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
except OSError:
    pass
run.setdefault("date", time.strftime("%Y-%m-%d", time.gmtime()))
run.setdefault("commit", commit)
run.setdefault("machine", "%s, %d CPUs visible, %s" % (model, os.cpu_count(), platform.platform()))
run.setdefault("transcribed", False)
run.setdefault("notes", "")
run["commands"] = run.get("commands", []) + [command]
json.dump(run, open(path, "w"), indent=1)
PY
# The table keeps the cells of earlier calls under OUT (so that cells run in
# separate calls make one table), each marked with its file's time.
"$PYTHON" - "$OUT" "$prefix" "$REFERENCE" "$label" "${written[@]}" <<'PY' | tee "$OUT/$prefix.md"
import glob, json, os, re, sys, time
out, prefix, ref, label = sys.argv[1:5]
written = set(sys.argv[5:])
rows = []
for p in glob.glob(os.path.join(out, prefix + "-*.json")):
    m = re.match(re.escape(prefix) + r"-(.+)-(\d+)-q(\d+)\.json$", os.path.basename(p))
    if m:
        when = "" if os.path.basename(p) in written else " (earlier call, %s)" % time.strftime(
            "%Y-%m-%d %H:%M", time.localtime(os.path.getmtime(p)))
        rows.append((m.group(1), int(m.group(2)), int(m.group(3)), json.load(open(p)), when))
rows.sort(key=lambda r: (-r[1], r[0], r[2]))
print("| workload | cores | tokens | ours, end to end | %s | per-pair ratio (95 %% CI) | ours faster |" % label)
print("|---|---:|---:|---:|---:|---:|---:|")
for preset, cores, q, d, when in rows:
    # Bold where the whole interval is below 1: ahead beyond the pairs' spread.
    ratio = ("**%.2f×**" if d["ci95"][1] < 1 else "%.2f×") % d["median_pair_ratio"]
    print("| %s, %d question%s%s | %d | %d | %.1f ms | %.1f ms | %s (%.2f–%.2f) | %d of %d |" % (
        preset, q, "" if q == 1 else "s", when, cores, d["input_tokens"], d["ours_median_ms"], d[ref + "_median_ms"],
        ratio, d["ci95"][0], d["ci95"][1], d["pairs_ours_faster"], d["pairs"]))
PY
