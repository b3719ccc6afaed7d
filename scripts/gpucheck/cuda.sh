#!/usr/bin/env bash
# The cuda backend on an NVIDIA GPU, from binaries that
# scripts/gpucheck/cuda-build.sh made. Run from the repository's root on a
# CUDA host (driver, NVRTC, cuBLAS; compute-sanitizer for the sanitize step):
#
#   bash BIN/cuda.sh BIN OUT [STEP...]
#
# STEPs (default: selftest conformance goldens bench):
#   selftest     cuda.SelfTest in every precision
#   conformance  the backend conformance suite (graphs on and off)
#   goldens      every oracle golden case and variant in fp32, fp16, bf16 and
#                fp16x2, and fp16/fp16x2 again on the tensor-core attention
#   tests        every test of the backend/cuda test binary (the kernels against
#                float64: attention, few-rows Linear, GEMM paths; discarded
#                outputs, concurrency, buckets, the kernel cache; and the above)
#   bench        laya-bench end to end on full-size synthetic English and
#                multilingual checkpoints, 1, 10 and 50 questions, each
#                precision (PRECISIONS, default "fp32 fp16 bf16 fp16x2")
#   profile      laya-bench --profile (per-operation GPU times, kernel by
#                kernel) on the synthetic English checkpoint, 1 and 10
#                questions, PROFILE_PRECISIONS (default fp32 fp16 fp16x2)
#   sanitize     compute-sanitizer memcheck over the tiny-en goldens (fp32,
#                and fp16x2 with the tensor-core attention), the few-rows
#                Linear kernel, the producers that skip their float32 output
#                and one forward per precision and attention kind
#                (TestSanitizerForward); racecheck over that forward and the
#                fp16-input attention kernels
#   own          the goldens (and bucketed graphs) with OWN_OPTIONS (default
#                mmarows=256: the GEMMs of few rows on linear_mma), and
#                memcheck and racecheck
#                over one such forward in fp16 and fp16x2
#   resources    every kernel's registers, local memory (spills) and warps a
#                multiprocessor as compiled here (TestKernelResources), with no
#                options (the core's kernels) and each of RESOURCE_OPTIONS, to resources-N.md; the
#                logs time each compile, and the kernel cache then holds every
#                set for the bench steps and cuda-ab.sh
#   timeline     every kernel of replayed requests (TIMELINE_PRESETS, default
#                english; TIMELINE_QUESTIONS, default "1 10")
#                traced through CUPTI (scripts/gpucheck/cupti-trace.c, built
#                with the host's gcc): kernel time against the idle between
#                kernels, by kernel (timeline-enQ.md, timeline-muQ.md for
#                multilingual; scripts/gpucheck/kernel-gaps.py)
#   inspect      ncu --set full of single launches (INSPECT: KERNEL:QUESTIONS:OPTIONS
#                ..., default linear_mma at one question with mmarows=256 and the
#                fp16 tensor-core attention at fifty), to inspect-N.csv
#   phases       ncu's per-instruction view (stall samples, instructions
#                executed) of PHASES_COUNT (default 4) consecutive launches of
#                the kernel PHASES_KERNEL (default linear_cl) from the 21st on,
#                at PHASES_QUESTIONS (default 1) English questions with PHASES_OPTIONS (default
#                clrows=128), graphs off, summed between the kernel's barriers
#                and copy fences (phases.md; scripts/gpucheck/ncu-phases.py;
#                the SASS view itself gzipped to phases-sass.csv.gz)
#   kernels      ncu kernel times of one laya-bench request (English 1, 10, 50
#                questions; PRECISIONS, default fp16x2), summed by kernel into
#                kernel-sums.csv (scripts/gpucheck/ncu-sums.py; ncu on PATH or
#                in /usr/local/cuda/bin)
# EXTRA (LAYA_CUDA options, e.g. pdl=off) is added after the
# precision in the bench, profile and kernels steps.
# Compiled kernels: a fresh machine compiles kernels.cu at the first Open
# (about a minute, and again for each set of define= tunables). Cubins in
# BIN/kcache are put in the kernel cache first; KEEP_KERNELS=1 copies the
# cache's cubins to OUT/kcache at the end, to carry into the next machine's
# BIN/kcache (each is a few MiB).
# Raw logs go to OUT; OUT/summary.md is the table.
set -uo pipefail
bin=$(cd "$1" && pwd)
out=$2
shift 2
steps=${*:-selftest conformance goldens bench}
mkdir -p "$out"
root=$(pwd)
src=$(cat "$bin/srcroot")
if [ "$src" != "$root" ] && [ ! -e "$src" ]; then
	mkdir -p "$(dirname "$src")" && ln -s "$root" "$src"
fi
kcache=${XDG_CACHE_HOME:-$HOME/.cache}/laya-metal/cuda
if [ -d "$bin/kcache" ]; then
	mkdir -p "$kcache" && cp "$bin"/kcache/*.cubin "$kcache"/ 2>/dev/null
fi
summary=$out/summary.md
{
	echo "# cuda backend on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1), commit $(cat "$bin/commit")"
	echo
	echo "| step | result | detail |"
	echo "|---|---|---|"
} >"$summary"

row() {
	local name=$1 log=$2 rc=$3
	local res=PASS
	[ "$rc" != 0 ] && res="FAIL (exit $rc)"
	echo "| $name | $res | $(grep -c -- '--- PASS' "$log") passed, $(grep -c -- '--- FAIL' "$log") failed, $(grep -c -- '--- SKIP' "$log") skipped |" >>"$summary"
}

for step in $steps; do
	case $step in
	selftest)
		"$bin/cuda.test" -test.v -test.count=1 -test.run 'TestSelfTest|TestRegistered|TestNoDriver' >"$out/selftest.log" 2>&1
		row selftest "$out/selftest.log" $?
		;;
	conformance)
		"$bin/cuda.test" -test.v -test.count=1 -test.run 'TestConformance' >"$out/conformance.log" 2>&1
		row conformance "$out/conformance.log" $?
		;;
	tests)
		# The CPU emulator's tests (TestEmu*) are CI's, not the GPU host's.
		"$bin/cuda.test" -test.v -test.count=1 -test.skip '^TestEmu' >"$out/tests.log" 2>&1
		row tests "$out/tests.log" $?
		;;
	kernels)
		ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
		for p in ${PRECISIONS:-fp16x2}; do
			for q in 1 10 50; do
				LAYA_CUDA=graphs=off,precision=$p${EXTRA:+,$EXTRA} "$ncu" --metrics gpu__time_duration.sum --clock-control none --cache-control none \
					--csv --print-units base "$bin/laya-bench" --backend cuda --synthetic english --questions "$q" --warmup 1 --runs 1 \
					--batch-size 64 >"$out/ncu-en$q-$p.csv" 2>"$out/ncu-en$q-$p.err"
			done
		done
		python3 "$root/scripts/gpucheck/ncu-sums.py" "$out"/ncu-*.csv >"$out/kernel-sums.csv"
		echo "| kernels | exit $? | kernel-sums.csv |" >>"$summary"
		;;
	timeline)
		# Every kernel's GPU start and end over replayed requests
		# (TIMELINE_PRESETS, default english; TIMELINE_QUESTIONS, default
		# "1 10"; PRECISIONS' first, default fp16x2, plus EXTRA),
		# graph nodes each on their own, from a CUPTI injection library
		# built here (scripts/gpucheck/cupti-trace.c; the host has CUPTI but
		# no Nsight Systems importer): how much of a forward's GPU time is
		# kernels and how much the idle between them
		# (scripts/gpucheck/kernel-gaps.py).
		cuda=${CUDA_HOME:-/usr/local/cuda}
		gcc -O2 -shared -fPIC -o "$out/libcupti-trace.so" "$root/scripts/gpucheck/cupti-trace.c" -I"$cuda/include" \
			-L"$cuda/lib64" -Wl,-rpath,"$cuda/lib64" -lcupti -lpthread >"$out/cupti-trace.log" 2>&1 ||
			echo "| timeline: build cupti-trace | FAIL | cupti-trace.log |" >>"$summary"
		p=${PRECISIONS:-fp16x2}
		p=${p%% *}
		for preset in ${TIMELINE_PRESETS:-english}; do
			for q in ${TIMELINE_QUESTIONS:-1 10}; do
				t=$out/timeline-${preset:0:2}$q
				CUDA_INJECTION64_PATH="$out/libcupti-trace.so" CUPTI_TRACE_OUT="$t.csv" \
					LAYA_CUDA=precision=$p${EXTRA:+,$EXTRA} "$bin/laya-bench" --backend cuda --synthetic "$preset" \
					--questions "$q" --warmup 5 --runs 20 --batch-size 64 >"$t.log" 2>&1 &&
					python3 "$root/scripts/gpucheck/kernel-gaps.py" "$t.csv" >"$t.md" 2>>"$t.log"
				echo "| timeline $preset $q ($p) | exit $? | ${t##*/}.md |" >>"$summary"
			done
		done
		;;
	inspect)
		# ncu's full sections (stall reasons, memory traffic, occupancy,
		# launch statistics) of single launches: each of INSPECT (space-
		# separated) is KERNEL_REGEX:QUESTIONS:LAYA_CUDA options, the 21st
		# launch of a matching kernel in a kernel-by-kernel request of the
		# synthetic English checkpoint.
		ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
		n=0
		read -ra specs <<<"${INSPECT:-linear_mma:1:mmarows=256,mmaln=off attention_mma64_4_1h:50:}"
		for spec in "${specs[@]}"; do
			IFS=: read -r kernel q opts <<<"$spec"
			LAYA_CUDA=graphs=off${opts:+,$opts} "$ncu" --set full -k "regex:$kernel" --launch-skip 20 --launch-count 1 \
				--csv --page details --print-units base "$bin/laya-bench" --backend cuda --synthetic english --questions "$q" \
				--warmup 1 --runs 1 --batch-size 64 >"$out/inspect-$n.csv" 2>"$out/inspect-$n.err"
			echo "| inspect ${spec//|/\\|} | exit $? | inspect-$n.csv |" >>"$summary"
			n=$((n + 1))
		done
		;;
	phases)
		ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
		LAYA_CUDA=graphs=off,${PHASES_OPTIONS:-clrows=128} "$ncu" --set full --import-source no -k "regex:${PHASES_KERNEL:-linear_cl}" \
			--launch-skip 20 --launch-count "${PHASES_COUNT:-4}" -o "$out/phases" "$bin/laya-bench" --backend cuda --synthetic english \
			--questions "${PHASES_QUESTIONS:-1}" --warmup 1 --runs 1 --batch-size 64 >"$out/phases.log" 2>&1 &&
			"$ncu" -i "$out/phases.ncu-rep" --csv --page source --print-source sass >"$out/phases-sass.csv" 2>>"$out/phases.log" &&
			"$ncu" -i "$out/phases.ncu-rep" --csv --page details --print-units base >"$out/phases-details.csv" 2>>"$out/phases.log" &&
			python3 "$root/scripts/gpucheck/ncu-phases.py" "$out/phases-sass.csv" >"$out/phases.md" 2>>"$out/phases.log"
		echo "| phases ${PHASES_KERNEL:-linear_cl} (${PHASES_OPTIONS:-clrows=128}) | exit $? | phases.md |" >>"$summary"
		gzip -f "$out/phases-sass.csv" "$out/phases-details.csv" 2>/dev/null
		rm -f "$out/phases.ncu-rep"
		;;
	resources)
		# Registers, local memory (spills) and register-limited warps a
		# multiprocessor of every kernel as this GPU's NVRTC compiled it,
		# with no options and with each of RESOURCE_OPTIONS (space-separated
		# LAYA_CUDA option sets, e.g. "define=ATTN_MMA_MINB=3
		# define=ATTN_MINB=1"). Each set not yet in the kernel cache is
		# compiled, and the log says how long it took: the defaults alone
		# first (on a fresh machine with no BIN/kcache, the first Open's
		# time), the others side by side, which also readies them for the
		# bench steps (the cache keeps the 8 latest cubins; a set that
		# needs the extras takes two). Without options only the core's
		# kernels load: mmarows=256,mmawarps=8,attnsplit=on adds the others.
		resources() {
			LAYA_CUDA_TEST_OPTIONS="$2" LAYA_CUDA_RESOURCES="$out/resources-$1.md" "$bin/cuda.test" -test.v -test.count=1 \
				-test.run '^TestKernelResources$' >"$out/resources-$1.log" 2>&1
			echo $? >"$out/resources-$1.rc"
		}
		resources 0 ""
		n=1
		read -ra sets <<<"${RESOURCE_OPTIONS:-}"
		for opts in "${sets[@]}"; do
			resources $n "$opts" &
			n=$((n + 1))
		done
		wait
		n=0
		for opts in "" "${sets[@]}"; do
			row "resources ${opts:-(defaults)}" "$out/resources-$n.log" "$(cat "$out/resources-$n.rc")"
			n=$((n + 1))
		done
		;;
	goldens)
		"$bin/cuda.test" -test.v -test.count=1 -test.run 'TestForwardGoldens' >"$out/goldens.log" 2>&1
		row goldens "$out/goldens.log" $?
		grep -o 'GOLDENS | .*' "$out/goldens.log" | sed 's/^GOLDENS/| goldens/;s/$/ |/' >>"$summary"
		;;
	own)
		# The goldens and the sanitizers with the GEMMs of few rows on
		# linear_mma (OWN_OPTIONS).
		opts=${OWN_OPTIONS:-mmarows=256}
		LAYA_CUDA_TEST_OPTIONS=$opts "$bin/cuda.test" -test.v -test.count=1 -test.run 'TestForwardGoldens|TestBucketsShareGraphs' >"$out/own.log" 2>&1
		row "own ($opts)" "$out/own.log" $?
		grep -o 'GOLDENS | .*' "$out/own.log" | sed "s/^GOLDENS/| own goldens/;s/\$/ |/" >>"$summary"
		for tool in memcheck racecheck; do
			log=$out/sanitize-$tool-own.log
			compute-sanitizer --tool "$tool" --print-limit 20 "$bin/cuda.test" -test.v -test.count=1 -test.run '^TestSanitizerForward$/own$' >"$log" 2>&1
			echo "| sanitize $tool own | exit $? | $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -1) |" >>"$summary"
		done
		;;
	bench)
		for lang in english multilingual; do
			for p in ${PRECISIONS:-fp32 fp16 bf16 fp16x2}; do
				LAYA_CUDA=precision=$p${EXTRA:+,$EXTRA} "$bin/laya-bench" --backend cuda --synthetic "$lang" --questions "${QUESTIONS:-1,10,50}" \
					--warmup "${WARMUP:-5}" --runs "${RUNS:-50}" --batch-size 64 --format json >"$out/bench-$lang-$p.json" 2>"$out/bench-$lang-$p.err"
				echo "| bench $lang $p | exit $? | bench-$lang-$p.json |" >>"$summary"
			done
		done
		;;
	profile)
		for p in ${PROFILE_PRECISIONS:-fp32 fp16 fp16x2}; do
			LAYA_CUDA=precision=$p${EXTRA:+,$EXTRA} "$bin/laya-bench" --backend cuda --synthetic english --questions 1,10 --warmup 3 --runs 10 \
				--profile >"$out/profile-english-$p.md" 2>&1
			echo "| profile english $p | exit $? | profile-english-$p.md |" >>"$summary"
		done
		;;
	sanitize)
		# go test splits -run at its slashes: one pattern a run. racecheck
		# follows every shared-memory access, too slow for the goldens: it
		# runs the one-forward-per-kernel-kind test and the fp16-input
		# kernels' own tests.
		for run in memcheck:goldens:'TestForwardGoldens/^(fp32|fp16x2\+mma)$/^tiny-en$' \
			memcheck:kernels:'^(TestFewRowsLinear|TestDiscardedProducers|TestSanitizerForward)$' \
			racecheck:forward:'^(TestSanitizerForward|TestHalfAttention)$'; do
			IFS=: read -r tool name pattern <<<"$run"
			log=$out/sanitize-$tool-$name.log
			compute-sanitizer --tool "$tool" --print-limit 20 "$bin/cuda.test" -test.v -test.count=1 -test.run "$pattern" >"$log" 2>&1
			echo "| sanitize $tool $name | exit $? | $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -1) |" >>"$summary"
		done
		;;
	*)
		echo "cuda.sh: unknown step $step" >&2
		exit 2
		;;
	esac
done
cat "$summary"
if [ "${KEEP_KERNELS:-0}" = 1 ]; then
	mkdir -p "$out/kcache" && cp "$kcache"/*.cubin "$out/kcache"/ 2>/dev/null
fi
