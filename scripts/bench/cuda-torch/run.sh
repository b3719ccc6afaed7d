#!/usr/bin/env bash
# The cuda backend against PyTorch's best on the same GPU, in one run: for
# each full-size synthetic checkpoint (English, multilingual), laya-bench
# end to end (tokenize → forward → answer JSON) in each precision, then
# torch_gpu_bench.py (eager fp32 and fp16, CUDA graph fp16, torch.compile
# reduce-overhead fp16) on the same checkpoint files, ROUNDS rounds each.
# Run from the repository root on the GPU host with binaries from
# scripts/gpucheck/cuda-build.sh:
#
#   bash scripts/bench/cuda-torch/run.sh BIN OUT
#
# Writes OUT/laya-<preset>-<precision>-r<round>.json (laya-bench --format
# json), OUT/laya-vary-<preset>-b<bucket>-r<round>.json (VARY token counts
# cycled, default 32; 0 skips) and OUT/torch-<preset>.jsonl; summarize.py
# turns them into the tables' CSV. WARMUP (default 10) requests before each
# question count's timed RUNS: a model's refinement gate learns what its
# batches cost over its first few dozen (backend.RefineGate). LANGS
# (default "english multilingual") picks the checkpoints, so that a run too
# long for one command can be two.
set -uo pipefail
bin=$(cd "$1" && pwd)
out=$2
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
rounds=${ROUNDS:-3}
for lang in ${LANGS:-english multilingual}; do
	for r in $(seq 1 "$rounds"); do
		# A word may add options after a colon ("fp16x2:refine=off"), its
		# files then named fp16x2_refine_off.
		for p in ${PRECISIONS:-fp32 fp16}; do
			label=$(echo "$p" | tr ':=,' '___')
			LAYA_CUDA=precision=${p/:/,} "$bin/laya-bench" --backend cuda --synthetic "$lang" --questions "${QUESTIONS:-1,10,50}" \
				--warmup "${WARMUP:-10}" --runs "${RUNS:-50}" --batch-size 64 --format json >"$out/laya-$lang-$label-r$r.json" 2>>"$out/laya.err"
		done
	done
	# Requests cycling through VARY token counts (k extra words for request
	# k), with the backend's token buckets and without: what real traffic,
	# whose lengths vary, costs in captures.
	if [ "${VARY:-32}" != 0 ]; then
		for r in $(seq 1 "$rounds"); do
			for b in 16 1; do
				LAYA_CUDA=precision=fp16x2,bucket=$b "$bin/laya-bench" --backend cuda --synthetic "$lang" --questions 1,10 \
					--vary "${VARY:-32}" --warmup 0 --runs 64 --batch-size 64 --format json >"$out/laya-vary-$lang-b$b-r$r.json" 2>>"$out/laya.err"
			done
		done
	fi
	ckpt=$HOME/.cache/laya-metal/synthetic/$lang
	PYTHONUNBUFFERED=1 python3 "$here/torch_gpu_bench.py" "$ckpt" "${TORCH_MODES:-eager32,eager16,graph16,compile16}" \
		--rounds "$rounds" --runs "${RUNS:-50}" --rows "${QUESTIONS:-1,10,50}" >"$out/torch-$lang.jsonl" 2>>"$out/torch.err"
done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv >"$out/gpu.csv"
