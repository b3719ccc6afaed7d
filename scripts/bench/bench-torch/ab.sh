#!/usr/bin/env bash
# Two laya-bench binaries (two commits of ours) against each other on this
# machine and these cores, interleaved pair by pair (A then B, then B then
# A, so that a drifting machine is seen by both equally), on the synthetic
# full-size checkpoints. Prints, per workload, both medians and the median
# of the paired ratios B/A with how many pairs B won: the method of the
# "×0.99 of the older code" A/Bs in docs/perf-log.md. A single pair on a
# shared host means little (one drifted by 10–20 % between runs).
#
# Needs python3 (no packages) and taskset; laya for the checkpoints
# (BIN/laya, from build.sh).
#
# Usage, from the module root:
#   scripts/bench/bench-torch/ab.sh OLD/laya-bench NEW/laya-bench
# Options (environment):
#   BIN=scripts/bench/bench-torch/bin   WORK=${TMPDIR:-/tmp}/laya-parity   CORES="2"
#   PRESETS="english multilingual"   QUESTIONS="1 10"   PAIRS=6   RUNS=5   PYTHON=python3
# Example (16 and 2 cores, ten questions, 8 pairs):
#   CORES="16 2" QUESTIONS=10 PAIRS=8 scripts/bench/bench-torch/ab.sh /tmp/old/laya-bench scripts/bench/bench-torch/bin/laya-bench
set -euo pipefail
if [ $# -ne 2 ] || [ ! -x "$1" ] || [ ! -x "$2" ]; then
  echo "usage: ab.sh A B   (two executable laya-bench binaries; see the comment at the top)" >&2
  exit 2
fi
A=$1 B=$2
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=${BIN:-$HERE/bin}
WORK=${WORK:-${TMPDIR:-/tmp}/laya-parity}
CORES=${CORES:-2}
PRESETS=${PRESETS:-"english multilingual"}
QUESTIONS=${QUESTIONS:-"1 10"}
PAIRS=${PAIRS:-6}
RUNS=${RUNS:-5}
PYTHON=${PYTHON:-python3}
mkdir -p "$WORK"
for preset in $PRESETS; do
  "$HERE/synth.sh" "$BIN" "$WORK" "$preset"
done
# p50 BIN CORES PRESET Q prints the request's P50 in ms.
p50() {
  GOMAXPROCS=$2 taskset -c "0-$(($2 - 1))" "$1" --model "$WORK/$3" --questions "$4" --runs "$RUNS" --warmup 1 --format json |
    "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["results"][0]["p50_ms"])'
}
printf '| workload | cores | A, median P50 | B, median P50 | B / A, median of pairs | B faster |\n|---|---:|---:|---:|---:|---:|\n'
for cores in $CORES; do
  for preset in $PRESETS; do
    for q in $QUESTIONS; do
      as=() bs=()
      for i in $(seq "$PAIRS"); do
        if [ $((i % 2)) -eq 1 ]; then
          a=$(p50 "$A" "$cores" "$preset" "$q") b=$(p50 "$B" "$cores" "$preset" "$q")
        else
          b=$(p50 "$B" "$cores" "$preset" "$q") a=$(p50 "$A" "$cores" "$preset" "$q")
        fi
        as+=("$a") bs+=("$b")
        echo "   $preset, $cores cores, $q question(s), pair $i: A $a ms, B $b ms" >&2
      done
      "$PYTHON" - "$preset" "$q" "$cores" "${as[*]}" "${bs[*]}" <<'PY'
import statistics, sys
preset, q, cores, a, b = sys.argv[1:]
a = [float(x) for x in a.split()]
b = [float(x) for x in b.split()]
r = [y / x for x, y in zip(a, b)]
print(f"| {preset}, {q} question(s) | {cores} | {statistics.median(a):.1f} ms | {statistics.median(b):.1f} ms | "
      f"×{statistics.median(r):.3f} ({min(r):.2f}–{max(r):.2f}) | {sum(x < 1 for x in r)}/{len(r)} |")
PY
    done
  done
done
