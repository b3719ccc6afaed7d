#!/usr/bin/env bash
# Runs steps on the GPU host within one device call, so that a call cut off
# by its time limit still brings back what its finished steps wrote: each
# step is a shell command, run in order from the repository root with R set
# to OUT/r (write results there); its start and exit status go to
# R/times.txt (seconds since the call began), its output to R/step-N.log, and
# R is packed into OUT/res.tgz every 20 seconds and once more at the end.
# nvidia-smi's view of the GPU goes to R/gpu.csv first.
#
#   bash scripts/gpucheck/cuda-call.sh "$OUT" \
#     'bash .gpu-cuda/cuda.sh .gpu-cuda $R/gold goldens' \
#     'VARIANTS="base:.gpu-cuda/laya-bench: kb0:.gpu-cuda/laya-bench:kbatch=0" bash .gpu-cuda/cuda-ab.sh $R/ab'
#
# (single quotes: $R is the harness's, expanded when the step runs).
set -uo pipefail
out=${1:?usage: cuda-call.sh OUT STEP...}
shift
R=$out/r
export R
mkdir -p "$R"
t0=$(date +%s)
stamp() { echo "$(date +%T) $(($(date +%s) - t0)) $*" >>"$R/times.txt"; }
pack() { tar czf "$out/res.tgz.tmp" -C "$out" r 2>/dev/null && mv "$out/res.tgz.tmp" "$out/res.tgz"; }
(while sleep 20; do pack; done) &
packer=$!
trap 'kill "$packer" 2>/dev/null; pack' EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv >"$R/gpu.csv" 2>&1
# Run from a bundle (cuda-build.sh's folder, this script copied into it),
# the test binary finds its testdata under the source root it was built
# in: linked here to the repository, as cuda.sh does, so that a step may
# run BIN/cuda.test itself.
here=$(cd "$(dirname "$0")" && pwd)
if [ -f "$here/srcroot" ]; then
	src=$(cat "$here/srcroot")
	if [ "$src" != "$(pwd)" ] && [ ! -e "$src" ]; then
		mkdir -p "$(dirname "$src")" && ln -s "$(pwd)" "$src"
	fi
fi
n=0
for step in "$@"; do
	n=$((n + 1))
	stamp "step $n: $step"
	bash -c "$step" >"$R/step-$n.log" 2>&1
	stamp "step $n exit $?"
done
