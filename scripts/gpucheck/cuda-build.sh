#!/usr/bin/env bash
# Builds what scripts/gpucheck/cuda.sh and cuda-cli.sh run on a CUDA host
# that has no Go: the backend/cuda test binary, laya-bench and laya built
# with -tags cuda (purego, no cgo), and both run scripts, into DIR (default
# .gpu-cuda).
#
#   scripts/gpucheck/cuda-build.sh [DIR]
#   # copy DIR to the CUDA host's checkout of this repository, then there:
#   bash DIR/cuda.sh DIR OUT [STEP...]
#
# The test binary finds testdata through the source paths it was built
# from; DIR/srcroot records this checkout's path, which the run script links
# to the host's checkout.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=${1:-$root/.gpu-cuda}
mkdir -p "$dir"
cd "$root"
export CGO_ENABLED=0 GOOS=linux GOARCH=amd64
go test -c -o "$dir/cuda.test" ./backend/cuda
go build -o "$dir/laya-bench" ./cmd/laya-bench
go build -tags cuda -o "$dir/laya" ./cmd/laya
cp scripts/gpucheck/cuda-cli.sh "$dir/"
cp scripts/gpucheck/cuda.sh "$dir/"
echo "$root" >"$dir/srcroot"
git rev-parse --short HEAD >"$dir/commit" 2>/dev/null || echo unknown >"$dir/commit"
ls -l "$dir"
