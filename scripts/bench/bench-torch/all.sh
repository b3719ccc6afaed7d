#!/usr/bin/env bash
# Everything BENCHMARKS.md's CPU tables rest on, in one go, on a
# machine with PyTorch and no Go: the Go micro-benchmarks
# (GFLOP/s per kernel, load time) from the prebuilt test binaries, the
# full-size parity check, and the ratio to PyTorch. Each step writes into
# OUT and a failed step does not stop the next.
#
# Usage, from the module root:  scripts/bench/bench-torch/all.sh OUT [BIN]
# (the scripts may live elsewhere: they find each other beside this file;
# testdata/ is read from the current directory.)
set -uo pipefail
OUT=${1:?usage: all.sh OUT [BIN]}
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=$(cd "${2:-$HERE/bin}" && pwd)
WORK=${WORK:-${TMPDIR:-/tmp}/laya-parity}
export WORK
mkdir -p "$OUT" "$WORK"
{ lscpu; nproc; free -g; python3 -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__, "threads", torch.get_num_threads())'; } > "$OUT/machine.txt" 2>&1
step() { local name=$1; shift; echo "== $name $(date +%T)" >&2; local t0=$SECONDS; "$@" > "$OUT/$name.log" 2>&1; echo "   rc $? in $((SECONDS - t0)) s" >&2; }
step parity "$HERE/../../goldens/parity/run.sh" "$BIN" "$WORK" "$OUT/parity"
ALL=$(nproc)
step gobench-cpu "$BIN/cpu.test" -test.run '^$' -test.bench 'GEMM/(avx512|avx2|neon)|Attention|Widen|Gelu' -test.benchtime 20x -test.cpu "2,$ALL"
step gobench-load env LAYA_BENCH_MODEL="$WORK/english" "$BIN/laya.test" -test.run '^$' -test.bench 'Load' -test.benchtime 5x
step bench-torch env OUT="$OUT/bench" BIN="$BIN" "$HERE/run.sh"
# A CPU profile of the English workloads at all cores (go tool pprof BIN/laya-bench FILE).
step profile env GOMAXPROCS="$ALL" "$BIN/laya-bench" --model "$WORK/english" --questions 1,10 --runs 5 --warmup 2 --cpuprofile "$OUT/profile-english-$ALL.pprof"
cat "$OUT/bench/table.md" 2>/dev/null
