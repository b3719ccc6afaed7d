#!/usr/bin/env bash
# Builds the static binaries run.sh and scripts/parity/run.sh take to a
# machine without Go: laya, laya-bench, parity, and the backend/cpu and root
# Go benchmark binaries (cpu.test, laya.test). GOOS/GOARCH default to this
# machine's; set them to cross-build.
#
# Usage, from the module root:  scripts/bench-torch/build.sh [BIN]
set -euo pipefail
BIN=${1:-scripts/bench-torch/bin}
mkdir -p "$BIN"
export CGO_ENABLED=0
# Stripped (-s -w): the binaries travel to the device host within its size limit.
LDFLAGS="-s -w"
go build -ldflags "$LDFLAGS" -o "$BIN/laya" ./cmd/laya
go build -ldflags "$LDFLAGS" -o "$BIN/laya-bench" ./cmd/laya-bench
go build -ldflags "$LDFLAGS" -o "$BIN/parity" ./scripts/parity
go test -c -ldflags "$LDFLAGS" -o "$BIN/cpu.test" ./backend/cpu
go test -c -ldflags "$LDFLAGS" -o "$BIN/laya.test" .
ls -l "$BIN"
