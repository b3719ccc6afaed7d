#!/usr/bin/env bash
# mac-check.sh: the one command that checks the Metal backend on a real Mac
# and writes a report worth sending back.
#
#   scripts/maccheck/mac-check.sh          quick check (about 5 minutes)
#   scripts/maccheck/mac-check.sh --full   also the full-size synthetic benchmark
#                                 (ModernBERT-large shapes; writes ~1 GB
#                                 once into the user cache; 15+ minutes)
#
# Send back the two files it names at the end, both at fixed paths in the
# repository root:
#   mac-check-report.txt     the report (also printed to stdout)
#   mac-check-logs.tar.gz    every step's full log
#
# Needs macOS 14 or newer on Apple Silicon and Go (the version go.mod names,
# or a newer go that fetches it). Nothing else: the binaries are cgo-free and
# load Metal.framework at run time, so Xcode is not needed. With clang (the
# Xcode Command Line Tools) the MSL emulator tests run too; without it they
# are skipped. Progress goes to stderr, the report to stdout.
#
# Environment: LAYA_CHECK_FULL=1 is --full; BENCH_RUNS (default 20) timed
# runs per benchmark workload; SOAK_REQUESTS (default 10000) requests of
# the laya serve soak; MAC_CHECK_PORT (default 18931) its loopback port.
set -uo pipefail

usage() {
	sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'
}

full="${LAYA_CHECK_FULL:-0}"
for arg in "$@"; do
	case "$arg" in
	--full) full=1 ;;
	-h | --help)
		usage
		exit 0
		;;
	*)
		echo "mac-check: unknown argument $arg (see --help)" >&2
		exit 2
		;;
	esac
done

root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root" || exit 2
export CGO_ENABLED=0

report_file="$root/mac-check-report.txt"
tarball="$root/mac-check-logs.tar.gz"
logdir="$root/mac-check-logs"
rm -rf "$logdir" "$report_file" "$tarball"
mkdir -p "$logdir"
steps="$logdir/steps.tsv"
envf="$logdir/env.txt"
: >"$steps"
: >"$envf"
runs="${BENCH_RUNS:-20}"

say() { printf '==> %s\n' "$*" >&2; }
fact() { printf '%s: %s\n' "$1" "$2" >>"$envf"; }
record() { printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "${5:-}" >>"$steps"; }

# stop explains why the check cannot run, as a report of its own.
stop() {
	{
		echo "laya-metal mac-check report (format 1)"
		echo
		echo "== environment"
		cat "$envf"
		echo
		echo "VERDICT: NOT RUN: $*"
	} | tee "$report_file"
	tar -czf "$tarball" -C "$root" "$(basename "$logdir")" 2>/dev/null
	exit 2
}

# run NAME LOG COMMAND...: one step, its output into LOG (relative to the
# log directory), recorded as PASS or FAIL with its duration.
run() {
	local name="$1" log="$2"
	shift 2
	say "$name"
	local start end rc
	start=$(date +%s)
	"$@" >"$logdir/$log" 2>&1
	rc=$?
	end=$(date +%s)
	if [[ $rc -eq 0 ]]; then
		record "$name" PASS "$((end - start))" "$log"
	else
		record "$name" FAIL "$((end - start))" "$log" "exit $rc"
		say "$name: FAILED (exit $rc), see $logdir/$log"
	fi
	return $rc
}

# ---------------------------------------------------------------------------
say "environment"
os="$(uname -s)"
arch="$(uname -m)"
fact "uname" "$os $arch"
if [[ "$os" != Darwin ]]; then
	stop "this script runs on macOS (uname says $os $arch)"
fi
macos="$(sw_vers -productVersion 2>/dev/null || echo '?')"
fact "macos" "$macos ($(sw_vers -buildVersion 2>/dev/null || echo '?'))"
fact "chip" "$(sysctl -n machdep.cpu.brand_string 2>/dev/null || echo '?')"
# Under Rosetta uname says x86_64 on an Apple Silicon Mac: this tells.
translated="$(sysctl -n sysctl.proc_translated 2>/dev/null || echo 'n/a (Intel)')"
fact "rosetta" "$translated"
fact "gpu" "$(system_profiler SPDisplaysDataType 2>/dev/null | awk -F': ' '/Chipset Model/ {m=$2} /Total Number of Cores/ {c=$2} END {printf "%s, %s cores", m, c}')"
fact "memory" "$(($(sysctl -n hw.memsize 2>/dev/null || echo 0) / 1048576)) MiB"
fact "page size" "$(sysctl -n hw.pagesize 2>/dev/null || pagesize 2>/dev/null || echo '?')"
fact "cpus" "$(sysctl -n hw.perflevel0.physicalcpu 2>/dev/null || echo '?') performance + $(sysctl -n hw.perflevel1.physicalcpu 2>/dev/null || echo '?') efficiency"
fact "repository" "$(git -C "$root" describe --always --dirty 2>/dev/null || echo '?')"
fact "mode" "$([[ $full == 1 ]] && echo full || echo quick)"

if ! command -v go >/dev/null 2>&1; then
	stop "Go is not installed: get it from https://go.dev/dl/ (or brew install go) and run scripts/maccheck/mac-check.sh again"
fi
fact "go" "$(go version 2>&1)"
go env >"$logdir/go-env.log" 2>&1
fact "go env" "$(grep -E '^(GOOS|GOARCH|GOARM64|GOVERSION|GOROOT|GOTOOLCHAIN|GOFLAGS|CGO_ENABLED)=' "$logdir/go-env.log" | tr '\n' ' ')"

major="${macos%%.*}"
if ! [[ "$major" =~ ^[0-9]+$ ]] || ((major < 14)); then
	stop "macOS $macos is too old: the kernels need MSL 3.1, which needs macOS 14 or newer"
fi
if [[ "$arch" != arm64 || "$translated" == 1 ]]; then
	# Not fatal: open explains the GPU family, and the report records it.
	say "note: $arch${translated:+ (proc_translated=$translated)}: the Metal backend needs Apple Silicon running arm64 code"
fi

clang_bin=""
for c in clang-19 clang; do
	if command -v "$c" >/dev/null 2>&1; then
		clang_bin="$c"
		break
	fi
done
if [[ -n "$clang_bin" ]]; then
	fact "clang" "$("$clang_bin" --version 2>/dev/null | head -1)"
else
	fact "clang" "none (emulator tests skipped)"
fi

# ---------------------------------------------------------------------------
run "build" build.log go build ./...
run "darwin vet" vet.log go vet ./...

# The darwin tests are named TestDevice* (package metal) and *GPU (package
# backend/gpu); everything else runs on the emulator.
run "GPU device tests" device.log \
	go test -count=1 -v -run '^TestDevice|^TestMsgSend' ./metal/
run "GPU model tests" model.log \
	go test -count=1 -v -run 'GPU$' -skip '^TestRSSAfterLoadGPU$' ./backend/gpu/
run "RSS after load" rss.log \
	go test -count=1 -v -run '^TestRSSAfterLoadGPU$' ./backend/gpu/

# The same GPU tests (the device tests and the model's goldens) under
# Apple's validation layers: shader validation (out-of-bounds and other
# faults inside kernels, which Apple GPUs otherwise turn into zeros or
# garbage), Metal API validation, and the Objective-C runtime's report of
# autoreleases without a pool. Validation also turns on the backend's
# dispatch labels, so a message names the operation and kernel.
run "validation pass" validation.log \
	env MTL_SHADER_VALIDATION=1 MTL_DEBUG_LAYER=1 OBJC_DEBUG_MISSING_POOLS=YES \
	go test -count=1 -v -run '^TestDevice|GPU$' -skip '^TestRSSAfterLoadGPU$' ./metal/ ./backend/gpu/

# Dispatch and Barrier run without an autorelease pool of their own; if the
# driver autoreleases there after all, the pass above counts missing pools,
# and this rerun says whether pools in those two calls cure it.
if grep -q 'MISSING POOLS' "$logdir/validation.log" 2>/dev/null; then
	run "pools in Dispatch and Barrier" pools.log \
		env LAYA_METAL_ENCODE_POOLS=1 OBJC_DEBUG_MISSING_POOLS=YES \
		go test -count=1 -v -run '^TestDevice|GPU$' -skip '^TestRSSAfterLoadGPU$' ./metal/ ./backend/gpu/
fi

# A user with the Command Line Tools builds with cgo by default: the real
# runtime/cgo, the external linker and another SDK version in the binary.
if [[ -n "$clang_bin" ]]; then
	run "GPU device tests (cgo)" device-cgo.log \
		env CGO_ENABLED=1 go test -count=1 -v -run '^TestDevice|^TestMsgSend' ./metal/
else
	record "GPU device tests (cgo)" SKIP 0 "" "no clang"
fi

# laya predict on the GPU against the CPU, request by request: the same
# choices, probabilities within the parity rule (scripts/maccheck parity).
predict_parity() {
	local laya="$logdir/laya" rc=0 req name
	go build -o "$laya" ./cmd/laya || return 1
	for req in testdata/requests/*.json; do
		name="$(basename "$req")"
		"$laya" predict --backend cpu --model testdata/oracle/checkpoints/real-en --request "$req" >"$logdir/predict-cpu-$name" || rc=1
		"$laya" predict --backend metal --model testdata/oracle/checkpoints/real-en --request "$req" >"$logdir/predict-metal-$name" || rc=1
		go run ./scripts/maccheck parity "$logdir/predict-cpu-$name" "$logdir/predict-metal-$name" || rc=1
	done
	return $rc
}
run "predict parity" parity.log predict_parity

# SOAK_REQUESTS requests through laya serve --backend metal with the
# server's RSS sampled: a leak per request (an autorelease pool missing on a
# path every request takes) shows as RSS still growing in the second half.
serve_soak() {
	local laya="$logdir/laya" port="${MAC_CHECK_PORT:-18931}" pid rc i
	go build -o "$laya" ./cmd/laya || return 1
	"$laya" serve --backend metal --model testdata/oracle/checkpoints/real-en --addr "127.0.0.1:$port" \
		--log-level warn >"$logdir/serve-server.log" 2>&1 &
	pid=$!
	for i in $(seq 1 120); do
		if curl -fsS "http://127.0.0.1:$port/ready" >/dev/null 2>&1; then
			break
		fi
		if ! kill -0 "$pid" 2>/dev/null; then
			echo "laya serve exited during start-up (serve-server.log)"
			return 1
		fi
		sleep 1
		[[ $i -eq 120 ]] && echo "laya serve not ready after 120 s"
	done
	curl -fsS "http://127.0.0.1:$port/health"
	echo
	go run ./scripts/maccheck soak "http://127.0.0.1:$port/v1/systemone" "${SOAK_REQUESTS:-10000}" "$pid" testdata/requests/email.json
	rc=$?
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	return $rc
}
run "serve soak" soak.log serve_soak

if [[ -n "$clang_bin" ]]; then
	# The emulator has never run on macOS: its steps have a verdict of
	# their own and do not decide the GPU's.
	run "emulator tests" emu.log \
		go test -count=1 -skip '^TestDevice|GPU$' ./metal/... ./backend/gpu/ ./backend/metalemu/ ./kernels/
else
	record "emulator tests" SKIP 0 "" "no clang"
fi

run "GPU benchmark" bench.log \
	go run ./cmd/laya-bench --backend metal --model testdata/oracle/checkpoints/real-en \
	--questions 1,5 --runs "$runs" --warmup 3 --profile
run "plan (a model)" plan.log \
	go run ./cmd/laya-bench --plan --synthetic english --questions 1

if [[ $full == 1 ]]; then
	run "full GPU benchmark" bench-full.log \
		go run ./cmd/laya-bench --backend metal --synthetic english --questions 1,5,10,50 --runs "$runs" --profile
	run "full CPU benchmark" bench-full-cpu.log \
		go run ./cmd/laya-bench --backend cpu --synthetic english --questions 1 --runs 5
	# laya-bench writes it under os.UserCacheDir(), ~/Library/Caches on macOS.
	cache="$HOME/Library/Caches/laya-metal/synthetic/english"
	if [[ -d "$cache" ]]; then
		run "RSS after load (full)" rss-full.log \
			env LAYA_RSS_CHECKPOINT="$cache" go test -count=1 -v -run '^TestRSSAfterLoadGPU$' ./backend/gpu/
	else
		record "RSS after load (full)" SKIP 0 "" "no synthetic checkpoint at $cache"
	fi
fi

# ---------------------------------------------------------------------------
say "report"
if ! go run ./scripts/maccheck report "$logdir" >"$report_file" 2>"$logdir/maccheck.log"; then
	# The report tool itself failed: send the raw records instead.
	{
		echo "laya-metal mac-check report (raw: scripts/maccheck failed, see maccheck.log)"
		cat "$envf" "$steps"
		for f in "$logdir"/*.log; do
			echo "--- $(basename "$f") (last 30 lines)"
			tail -n 30 "$f"
		done
		if grep -q $'\tFAIL\t' "$steps"; then echo "VERDICT: FAIL"; else echo "VERDICT: UNKNOWN"; fi
	} >"$report_file"
fi
cp "$report_file" "$logdir/"
tar -czf "$tarball" -C "$root" "$(basename "$logdir")"
cat "$report_file"
say "report: $report_file"
say "logs:   $tarball"
say "please send both files back"
grep -q '^VERDICT: PASS' "$report_file"
