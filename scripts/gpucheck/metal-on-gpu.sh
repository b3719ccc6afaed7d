#!/usr/bin/env bash
# The Metal backend on an NVIDIA GPU (backend metal-cuda), from binaries that
# scripts/gpucheck/metal-on-gpu-build.sh made. Run from the repository's root on a
# CUDA host (driver, NVRTC, compute-sanitizer):
#
#   bash BIN/metal-on-gpu.sh BIN OUT [STEP...]
#
# STEPs (default: all, in this order):
#   shim         shim semantics, every kernel through NVRTC, vector_add
#   conformance  the backend conformance suite on metal-cuda (4 streams; 3
#                streams shuffled)
#   goldens      every oracle golden case on metal-cuda
#   sanitize     compute-sanitizer racecheck, memcheck and synccheck over
#                the tiny-en goldens, and racecheck over softmax with a
#                barrier removed on purpose (must be reported)
#   synth        full-size synthetic English and multilingual checkpoints
#                against the cpu backend (1, 10, 50 questions; short and
#                max_len states), then per-kernel GPU times
# Raw logs go to OUT; OUT/summary.md is the table. Timings are NVIDIA timings
# of Apple-tuned kernels, not Apple estimates.
set -uo pipefail
bin=$(cd "$1" && pwd)
out=$2
shift 2
steps=${*:-shim conformance goldens sanitize synth}
mkdir -p "$out"
root=$(pwd)
src=$(cat "$bin/srcroot")
if [ "$src" != "$root" ] && [ ! -e "$src" ]; then
	mkdir -p "$(dirname "$src")" && ln -s "$root" "$src"
fi
summary=$out/summary.md
{
	echo "# metal-cuda on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1), commit $(cat "$bin/commit")"
	echo
	echo "| step | result | detail |"
	echo "|---|---|---|"
} >"$summary"

# row STEP LOG: PASS/FAIL from a go test log.
row() {
	local name=$1 log=$2 rc=$3
	local pass fail skip
	pass=$(grep -c -- '--- PASS' "$log")
	fail=$(grep -c -- '--- FAIL' "$log")
	skip=$(grep -c -- '--- SKIP' "$log")
	local res=PASS
	[ "$rc" != 0 ] && res="FAIL (exit $rc)"
	echo "| $name | $res | $pass passed, $fail failed, $skip skipped ($(basename "$log")) |" >>"$summary"
}

# sanitize TOOL LOG ARGS...: compute-sanitizer's summary line.
sanitize() {
	local tool=$1 log=$2
	shift 2
	compute-sanitizer --tool "$tool" --print-limit 20 "$@" >"$log" 2>&1
	local rc=$?
	local line
	line=$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -1)
	grep -q -- '--- PASS' "$log" || line="$line; the test did not run"
	echo "| sanitize $tool $(echo "$*" | sed 's/.*-test.run //;s/ .*//') | exit $rc | ${line:-no summary} |" >>"$summary"
}

for step in $steps; do
	case $step in
	shim)
		"$bin/cuda.test" -test.v -test.count=1 >"$out/shim.log" 2>&1
		row "shim + NVRTC (metal/cuda)" "$out/shim.log" $?
		grep -E 'NVRTC:' "$out/shim.log" | head -2 | sed 's/^ */| NVRTC | - | /;s/$/ |/' >>"$summary"
		grep -o 'LAUNCH | .*' "$out/shim.log" | sed 's/^LAUNCH /| launch cost /;s/ |$//;s/ | / /2g;s/$/ | |/' >>"$summary"
		;;
	conformance)
		("$bin/metalcuda.test" -test.v -test.count=1 -test.run 'TestRegistered|TestConformance') >"$out/conformance.log" 2>&1
		row "conformance (backendtest on metal-cuda)" "$out/conformance.log" $?
		;;
	goldens)
		("$bin/metalcuda.test" -test.v -test.count=1 -test.run 'TestForwardGoldens') >"$out/goldens.log" 2>&1
		row "goldens (oracle cases)" "$out/goldens.log" $?
		grep -o 'GOLDENS .*' "$out/goldens.log" | sed 's/^/| /;s/$/ | |/;s/GOLDENS /goldens | /' >>"$summary"
		;;
	sanitize)

		for tool in racecheck memcheck synccheck; do
			sanitize $tool "$out/sanitize-$tool.log" "$bin/metalcuda.test" -test.v -test.count=1 -test.run 'TestForwardGoldens/copied/tiny-en'
		done

		LAYA_CUDA_RACY=1 compute-sanitizer --tool racecheck --print-limit 5 "$bin/cuda.test" -test.v -test.count=1 -test.run TestRacySoftmax >"$out/sanitize-racy.log" 2>&1
		where=$(grep -oE 'softmax\.metal:[0-9]+' "$out/sanitize-racy.log" | sort | uniq -c | tr '\n' ' ')
		hazards=$(grep -E 'RACECHECK SUMMARY' "$out/sanitize-racy.log" | tail -1)
		echo "| racecheck, softmax with a barrier removed | $([ -n "$where" ] && echo caught || echo 'NOT caught') | $hazards at $where |" >>"$summary"
		;;
	synth)
		for p in "english modernbert testdata/tokenizers/modernbert" "multilingual tiny-ml testdata/oracle/checkpoints/tiny-ml/tokenizer"; do
			read -r preset _ tok <<<"$p"
			[ -d "/tmp/synth-$preset" ] || "$bin/laya" synth --preset "$preset" --out "/tmp/synth-$preset" --tokenizer "$tok" >>"$out/synth.log" 2>&1
		done
		(LAYA_CUDA_SYNTH=/tmp/synth-english:tiny-en,/tmp/synth-multilingual:tiny-ml \
			"$bin/metalcuda.test" -test.v -test.count=1 -test.timeout 30m -test.run 'TestSyntheticParity|TestSyntheticProfile') >>"$out/synth.log" 2>&1
		row "synthetic full size vs cpu" "$out/synth.log" $?
		{
			echo
			echo "| checkpoint | questions | tokens/row | answers equal | max abs dlogit | max abs dprob | max abs dact | metal-cuda first ms | metal-cuda ms | cpu ms |"
			echo "|---|---|---|---|---|---|---|---|---|---|"
			grep -o 'PARITY | .*' "$out/synth.log" | sed 's/^PARITY //'
			echo
			echo "Max |Δ| metal-cuda vs cpu per stage, one question:"
			echo
			grep -o 'LAYERS | .*' "$out/synth.log" | sed 's/^LAYERS /- /'
			echo
			echo "Per-kernel GPU time of one forward (NVIDIA timings of Apple-tuned kernels, not an Apple estimate):"
			echo
			echo "| checkpoint | questions | tokens/row | kernel | dispatches | ms | us/dispatch |"
			echo "|---|---|---|---|---|---|---|"
			grep -o 'KERNEL | .*' "$out/synth.log" | sed 's/^KERNEL //'
		} >>"$summary"
		;;
	*)
		echo "unknown step $step" >&2
		exit 2
		;;
	esac
done
cat "$summary"
