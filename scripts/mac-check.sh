#!/usr/bin/env bash
# mac-check.sh: one command that checks the Metal backend on a real Mac.
#
# Run from anywhere inside the repository:   scripts/mac-check.sh
#
# What it needs:
#   - macOS on Apple Silicon (arm64); an Intel Mac works but is not a target.
#   - Go 1.26 or newer on PATH. Nothing else: the binaries are cgo-free
#     (CGO_ENABLED=0) and load Metal.framework at run time, so Xcode and the
#     Command Line Tools are NOT required to run the GPU tests.
#   - Optional: clang (Xcode Command Line Tools, or Homebrew llvm) for the
#     MSL emulator tests, which compare the emulator with the Go references;
#     without clang that part is skipped with a message.
#
# Environment:
#   BENCHTIME   -benchtime for the benchmarks (default 2s)
#   SKIP_BENCH  set to 1 to skip the benchmarks
#
# It prints a short report at the end and exits non-zero if a step failed.
set -euo pipefail

cd "$(dirname "$0")/.."
export CGO_ENABLED=0

benchtime="${BENCHTIME:-2s}"
logdir="$(mktemp -d "${TMPDIR:-/tmp}/mac-check.XXXXXX")"
declare -a report=()
status=0

step() { printf '\n==> %s\n' "$*"; }
record() { report+=("$(printf '%-28s %s' "$1" "$2")"); }

step "platform"
platform="$(uname -sm)"
echo "$platform"
case "$platform" in
Darwin\ arm64) ;;
Darwin\ x86_64) echo "note: Intel Mac; the backend targets Apple Silicon" ;;
*)
	echo "error: this script needs macOS (uname -sm says: $platform)" >&2
	exit 2
	;;
esac
sw_vers 2>/dev/null | sed 's/^/  /' || true
gpu="$(system_profiler SPDisplaysDataType 2>/dev/null | awk -F': ' '/Chipset Model/ {print $2; exit}')" || true
go version
record "platform" "$platform, macOS $(sw_vers -productVersion 2>/dev/null || echo '?'), GPU ${gpu:-?}"

step "build and vet (darwin, CGO_ENABLED=0)"
if go build ./... && go vet ./metal/...; then
	record "build + vet" "ok"
else
	record "build + vet" "FAILED"
	status=1
fi

step "GPU device tests: go test -v -run Device ./metal/"
if go test -count=1 -v -run Device ./metal/ 2>&1 | tee "$logdir/device.log"; then
	record "GPU device tests" "ok ($(grep -c -- '^--- PASS' "$logdir/device.log" || true) passed)"
else
	record "GPU device tests" "FAILED (see $logdir/device.log)"
	status=1
fi
# The tests log device name, MSL version, per-kernel max error and GPU time.
grep -E "device \"|max \|err\||GPU " "$logdir/device.log" | sed 's/^ *//' | head -40 >"$logdir/device.summary" || true

step "model on the GPU: ops vs the CPU backend, forward vs upstream goldens"
if go test -count=1 -v -run 'TestOpsMatchCPUGPU|TestForwardGoldensGPU' ./backend/metal/ 2>&1 | tee "$logdir/model.log"; then
	record "model on the GPU" "ok ($(grep -c -- '--- PASS' "$logdir/model.log" || true) passed)"
else
	record "model on the GPU" "FAILED (see $logdir/model.log)"
	status=1
fi

step "emulator tests (need clang)"
clang_bin=""
for c in clang-19 clang; do
	if command -v "$c" >/dev/null 2>&1; then
		clang_bin="$c"
		break
	fi
done
if [[ -z "$clang_bin" ]]; then
	echo "clang not found: skipping the MSL emulator comparison (install the Xcode Command Line Tools to run it)"
	record "emulator tests" "skipped (no clang)"
else
	echo "using $clang_bin: $("$clang_bin" --version | head -1)"
	if go test -count=1 ./metal/ ./kernels/ 2>&1 | tee "$logdir/emu.log"; then
		record "emulator tests" "ok ($clang_bin)"
	else
		record "emulator tests" "FAILED (see $logdir/emu.log)"
		status=1
	fi
fi

if [[ "${SKIP_BENCH:-0}" != 1 ]]; then
	# Without clang only the GPU benchmarks can run; the emulator's need it.
	bench_pattern="."
	[[ -n "$clang_bin" ]] || bench_pattern="Device"
	step "benchmarks: go test -run '^$' -bench '$bench_pattern' -benchtime $benchtime ./metal/"
	if go test -count=1 -run '^$' -bench "$bench_pattern" -benchmem -benchtime "$benchtime" ./metal/ 2>&1 | tee "$logdir/bench.log"; then
		record "benchmarks" "ok"
	else
		record "benchmarks" "FAILED (see $logdir/bench.log)"
		status=1
	fi
fi

if [[ "${SKIP_BENCH:-0}" != 1 ]]; then
	# End-to-end latency, comparable with laya-mlx's 7.4-17.7 ms per short decision
	# (M3 Max). The synthetic checkpoint has ModernBERT-large's real shapes.
	step "laya-bench: GPU and CPU, bundled and full-size synthetic checkpoints"
	{
		go run ./cmd/laya-bench --backend metal --model testdata/oracle/checkpoints/real-en --questions 1,5,10 &&
			go run ./cmd/laya-bench --backend metal --synthetic english --questions 1,5,10,50 &&
			go run ./cmd/laya-bench --backend cpu --synthetic english --questions 1 --runs 5
	} 2>&1 | tee "$logdir/laya-bench.log" && record "laya-bench" "ok" || {
		record "laya-bench" "FAILED (see $logdir/laya-bench.log)"
		status=1
	}
fi

step "report"
for line in "${report[@]}"; do
	echo "  $line"
done
if [[ -s "$logdir/device.summary" ]]; then
	echo "  GPU details:"
	sed 's/^/    /' "$logdir/device.summary"
fi
if [[ -s "$logdir/laya-bench.log" ]]; then
	echo "  laya-bench:"
	grep -E '\|' "$logdir/laya-bench.log" | sed 's/^/    /' || true
fi
if [[ -s "$logdir/bench.log" ]]; then
	echo "  benchmarks:"
	grep -E '^Benchmark' "$logdir/bench.log" | sed 's/^/    /' || true
fi
echo "  logs: $logdir"
if [[ $status -ne 0 ]]; then
	echo "RESULT: FAILED"
else
	echo "RESULT: ok"
fi
exit "$status"
