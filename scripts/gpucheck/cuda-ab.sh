#!/usr/bin/env bash
# Builds of the cuda backend, or option sets of one build, against each other
# in one call on a CUDA host: laya-bench end to end on the full-size
# synthetic checkpoints, the variants alternated round by round, so that the
# host's drift between calls does not enter the comparison. Run from the
# repository root with binaries from scripts/gpucheck/cuda-build.sh:
#
#   VARIANTS="base:.gpu-cuda/laya-bench: new:.gpu-cuda/laya-bench-new: simt:.gpu-cuda/laya-bench:attn=simt" \
#     bash scripts/gpucheck/cuda-ab.sh OUT
#   python3 scripts/gpucheck/cuda-ab.py OUT > OUT/cuda-ab.csv
#
# Each variant is NAME:BINARY:OPTIONS (OPTIONS as LAYA_CUDA takes them, added
# after precision=P; empty for none). Environment: PRECISIONS (default
# fp16x2), PRESETS (english multilingual), QUESTIONS (1,10,50), ROUNDS (2),
# RUNS (30), WARMUP (5). Writes OUT/ab-NAME-PRESET-P-rR.json (laya-bench
# --format json, with the GPU time of each request) and OUT/variants.txt.
set -uo pipefail
out=${1:?usage: cuda-ab.sh OUT}
mkdir -p "$out"
: "${VARIANTS:?set VARIANTS to NAME:BINARY:OPTIONS ...}"
# The variants in order, the first the base of cuda-ab.py's ratios.
for v in $VARIANTS; do echo "${v%%:*}"; done >"$out/variants.txt"
for r in $(seq 1 "${ROUNDS:-2}"); do
	for preset in ${PRESETS:-english multilingual}; do
		for p in ${PRECISIONS:-fp16x2}; do
			for v in $VARIANTS; do
				IFS=: read -r name bin opts <<<"$v"
				LAYA_CUDA="precision=$p${opts:+,$opts}" "$bin" --backend cuda --synthetic "$preset" --questions "${QUESTIONS:-1,10,50}" \
					--warmup "${WARMUP:-5}" --runs "${RUNS:-30}" --batch-size 64 --format json \
					>"$out/ab-$name-$preset-$p-r$r.json" 2>>"$out/ab.err" || echo "ab: $name $preset $p round $r failed" >&2
			done
		done
	done
done
