#!/usr/bin/env bash
# Prints the path of the kernel emulator built as a fake CUDA stack
# (backend/cuda/testdata/emu, clang++-19: the driver, NVRTC and cuBLAS, and
# cuBLASLt through the libcublasLt.so link made beside it, which the backend
# takes for the cuBLAS named by path): with it, the cuda backend runs on
# the CPU in any program that reads LAYA_CUDA, so that the GPU host's scripts
# can be tried here first, on a small checkpoint (every kernel runs on the
# CPU):
#
#   lib=$(bash scripts/gpucheck/cuemu.sh)
#   LAYA_CUDA=driver=$lib,nvrtc=$lib,cublas=$lib,cache=off \
#     go run ./cmd/laya-bench --backend cuda --synthetic tiny --questions 1,4 --runs 3
#
# The library runs only the kernels.cu it was built from: rebuild it (run
# this again) after kernels.cu changes. It is built without tunables and
# refuses define= options (the tests' emuLibTuned builds one with them).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
(cd "$root" && LAYA_CUEMU_OUT=$tmp go test -count=1 -run '^TestEmuLibrary$' ./backend/cuda/ >&2)
if [ ! -s "$tmp" ]; then
	echo "cuemu: the emulator was not built (is clang++-19 installed?)" >&2
	exit 1
fi
cat "$tmp"
