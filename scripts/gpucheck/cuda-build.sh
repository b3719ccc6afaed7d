#!/usr/bin/env bash
# Builds what scripts/gpucheck/cuda.sh, cuda-cli.sh and cuda-serve.sh run on
# a CUDA host that has no Go: the backend/cuda test binary, laya-bench, laya
# built with -tags cuda (purego, no cgo), serveload, and the run scripts,
# into DIR (default .gpu-cuda). The binaries are stripped (-s -w) so that DIR
# stays small enough to copy with the checkout.
#
#   scripts/gpucheck/cuda-build.sh [DIR]
#   # copy DIR to the CUDA host's checkout of this repository, then there:
#   bash DIR/cuda.sh DIR OUT [STEP...]
#   bash DIR/cuda-serve.sh DIR OUT
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
go test -c -ldflags="-s -w" -o "$dir/cuda.test" ./backend/cuda
go build -ldflags="-s -w" -o "$dir/laya-bench" ./cmd/laya-bench
go build -tags cuda -ldflags="-s -w" -o "$dir/laya" ./cmd/laya
go build -ldflags="-s -w" -o "$dir/serveload" ./scripts/bench/serveload
cp scripts/gpucheck/cuda-cli.sh "$dir/"
cp scripts/gpucheck/cuda.sh "$dir/"
cp scripts/gpucheck/cuda-serve.sh "$dir/"
# The precision the cuda backend runs in unless LAYA_CUDA names one, for
# cuda-serve.sh's labels.
go doc ./backend/cuda DefaultPrecision | sed -n 's/^const DefaultPrecision = \([A-Za-z0-9]*\)$/\1/p' |
	tr '[:upper:]' '[:lower:]' >"$dir/cuda-precision"
echo "$root" >"$dir/srcroot"
git rev-parse --short HEAD >"$dir/commit" 2>/dev/null || echo unknown >"$dir/commit"
ls -l "$dir"
du -sh "$dir"
