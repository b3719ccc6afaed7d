#!/usr/bin/env bash
# Packs what one device call on a CUDA host with no Go needs into DIR:
# cuda-build.sh's binaries (laya and serveload only with SERVE=1: the bench,
# test and ncu steps do not run them), laya-bench built from each REF
# (cuda-build-refs.sh; with TESTS=1 their test binaries too), the call
# harness and the analysis scripts beside them, and every binary gzipped,
# so that DIR fits what a call may carry with the checkout (64 MiB; the
# gzipped core is about 13 MiB, each REF about 4 more). It prints the
# command that unpacks DIR on the host and runs the steps.
#
#   scripts/gpucheck/cuda-bundle.sh .gpu-cuda 09bfa8c
#   # on the host, from the checkout's root, with .gpu-cuda carried:
#   gunzip -f .gpu-cuda/*.gz; chmod +x .gpu-cuda/*
#   bash .gpu-cuda/cuda-call.sh "$OUT" 'STEP' ...     # see cuda-call.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=${1:?usage: cuda-bundle.sh DIR [REF...]}
shift
# DIR is made anew: only an earlier bundle (srcroot is cuda-build.sh's) is
# removed, never a folder that holds something else.
if [ -e "$dir" ]; then
	if [ ! -f "$dir/srcroot" ]; then
		echo "cuda-bundle: $dir exists and is not a bundle; name a new folder" >&2
		exit 1
	fi
	rm -rf "$dir"
fi
"$root/scripts/gpucheck/cuda-build.sh" "$dir" >/dev/null
if [ "${SERVE:-0}" != 1 ]; then
	rm -f "$dir/laya" "$dir/serveload"
fi
if [ $# -gt 0 ]; then
	"$root/scripts/gpucheck/cuda-build-refs.sh" "$dir" "$@"
fi
for f in cuda-call.sh cuda-ab.sh cuda-ab.py first-calls.py; do
	cp "$root/scripts/gpucheck/$f" "$dir/"
done
for f in "$dir"/*; do
	if [ -f "$f" ] && [ -x "$f" ] && head -c 4 "$f" | grep -q ELF; then
		gzip -f "$f"
	fi
done
du -sh "$dir"
echo "on the host: gunzip -f $dir/*.gz; chmod +x $dir/*; bash $dir/cuda-call.sh \"\$OUT\" 'STEP' ..."
