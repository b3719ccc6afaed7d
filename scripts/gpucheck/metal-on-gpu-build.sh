#!/usr/bin/env bash
# Builds what scripts/gpucheck/metal-on-gpu.sh runs on a CUDA host that has no Go:
# static test binaries of metal/cuda and backend/metalcuda, the laya CLI (for
# `laya synth`), and the run script itself, into DIR (default .gpu).
#
#   scripts/gpucheck/metal-on-gpu-build.sh [DIR]
#   # copy DIR to the CUDA host's checkout of this repository, then there:
#   bash DIR/metal-on-gpu.sh DIR OUT
#
# The test binaries find testdata through the source paths they were built
# from; DIR/srcroot records this checkout's path, which the run script links
# to the host's checkout.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=${1:-$root/.gpu}
mkdir -p "$dir"
cd "$root"
export CGO_ENABLED=0 GOOS=linux GOARCH=amd64
go test -c -o "$dir/cuda.test" ./metal/cuda
go test -c -o "$dir/metalcuda.test" ./backend/metalcuda
go build -o "$dir/laya" ./cmd/laya
cp scripts/gpucheck/metal-on-gpu.sh "$dir/"
echo "$root" >"$dir/srcroot"
git rev-parse --short HEAD >"$dir/commit" 2>/dev/null || echo unknown >"$dir/commit"
ls -l "$dir"
