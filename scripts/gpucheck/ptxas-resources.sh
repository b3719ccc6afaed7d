#!/usr/bin/env bash
# An estimate, without a GPU, of what each cuda kernel takes of a
# multiprocessor: clang-19 writes kernels.cu's PTX (everything inlined, as
# NVRTC does) and Debian's ptxas (CUDA 12.4, scripts/gpucheck/fetch-ptxas.sh)
# assembles it for sm_90 with -v. Neither is the GPU's own compiler (NVRTC's
# front end, a newer ptxas), so the numbers are a guide to where registers
# spill or cut occupancy, not a measurement: on a GPU,
# `cuda.test -test.run TestKernelResources -test.v` reports the real ones.
#
#   bash scripts/gpucheck/ptxas-resources.sh [-DNAME=VALUE ...] [KERNEL_REGEX]
#
# The -D flags set kernels.cu's tunables (cuda.KernelTunables); the table
# (kernel, registers, stack bytes, spill stores/loads, warps a multiprocessor
# by registers) goes to standard output. ARCH=sm_90a assembles for the
# architecture-specific target (linear_wg's wgmma). SASS_DIR=DIR also writes each listed
# kernel's SASS (the same package's cuobjdump, fetch-ptxas.sh --sass) to
# DIR/KERNEL.sass: what ptxas made of a loop, read without a GPU (NVRTC's may
# differ). SASS_DIR takes the package's ptxas, not LAYA_PTXAS, whose
# directory may lack the disassembler.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
defines=()
filter=.
for a in "$@"; do
	case $a in
	-D*) defines+=("$a") ;;
	*) filter=$a ;;
	esac
done
if [ -n "${SASS_DIR:-}" ]; then
	ptxas=$(bash "$root/scripts/gpucheck/fetch-ptxas.sh" --sass)
	mkdir -p "$SASS_DIR"
	SASS_DIR=$(cd "$SASS_DIR" && pwd)
else
	ptxas=${LAYA_PTXAS:-$(bash "$root/scripts/gpucheck/fetch-ptxas.sh")}
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$root/backend/cuda"
clang-19 -x cuda --cuda-gpu-arch="${ARCH:-sm_90}" --cuda-device-only -nocudainc -nocudalib -O3 -fno-builtin -mllvm -inline-threshold=1000000 \
	-S -o "$tmp/k.ptx" -std=c++17 "${defines[@]}" -include ../../metal/cuda/testdata/cuda_stub.h -include testdata/nvrtc_extra.h \
	kernels.cu 2>"$tmp/clang.err" || { cat "$tmp/clang.err" >&2; exit 1; }
if ! "$ptxas" -c -arch="${ARCH:-sm_90}" -O3 -v -o "$tmp/k.cubin" "$tmp/k.ptx" >"$tmp/ptxas.log" 2>&1; then
	grep -v '^ptxas info' "$tmp/ptxas.log" >&2 || true
	echo "ptxas-resources: $ptxas refused the PTX" >&2
	exit 1
fi
# What ptxas says besides the figures (a launch bound it ignores) matters.
grep -v -e '^ptxas info' -e '^    [0-9]* bytes stack frame' "$tmp/ptxas.log" >&2 || true
FILTER=$filter python3 -c '
import os, re, sys
flt = re.compile(os.environ["FILTER"])
print("| kernel | registers | stack bytes | spill stores | spill loads | warps/SM (registers) |")
print("|---|---:|---:|---:|---:|---:|")
name, frame = None, ("0", "0", "0")
for line in sys.stdin:
    m = re.search(r"Compiling entry function \x27(\w+)\x27", line)
    if m:
        name = m.group(1)
        continue
    m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
    if m:
        frame = m.groups()
        continue
    m = re.search(r"Used (\d+) registers", line)
    if m and name and flt.search(name):
        regs = int(m.group(1))
        # Four register partitions of 16384, whole warps in each.
        warps = min(64, 16384 // ((regs * 32 + 255) // 256 * 256) * 4)
        print(f"| {name} | {regs} | {frame[0]} | {frame[1]} | {frame[2]} | {warps} |")
        name = None
' <"$tmp/ptxas.log"
if [ -n "${SASS_DIR:-}" ]; then
	bin=$(dirname "$ptxas")
	{ grep -o "Compiling entry function '[A-Za-z0-9_]*'" "$tmp/ptxas.log" | cut -d"'" -f2 | grep -E -- "$filter" || true; } |
		while read -r k; do
			PATH="$bin:$PATH" cuobjdump -sass -fun "$k" "$tmp/k.cubin" >"$SASS_DIR/$k.sass"
		done
fi
