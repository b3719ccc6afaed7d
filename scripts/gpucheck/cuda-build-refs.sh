#!/usr/bin/env bash
# Builds laya-bench (and, with TESTS=1, the backend/cuda test binary) from
# each git REF into DIR as laya-bench-NAME (cuda.test-NAME), NAME the ref with
# "/" as "-", for scripts/gpucheck/cuda-ab.sh to set builds against each
# other in one call on a CUDA host. Stripped: about 10 MiB each (4 MiB a
# test binary), which is what limits how many travel together. A test binary
# finds testdata through the path it was built at, a temporary worktree
# named in DIR/srcroot-NAME: on the host, link that path to the checkout
# (mkdir -p "$(dirname "$(cat DIR/srcroot-NAME)")"; ln -s "$PWD" "$(cat DIR/srcroot-NAME)").
#
#   scripts/gpucheck/cuda-build-refs.sh DIR main experiments/some-change
#   VARIANTS="main:DIR/laya-bench-main: change:DIR/laya-bench-experiments-some-change:" \
#     bash scripts/gpucheck/cuda-ab.sh OUT
set -euo pipefail
dir=$(mkdir -p "${1:?usage: cuda-build-refs.sh DIR REF...}" && cd "$1" && pwd)
shift
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
for ref in "$@"; do
	name=${ref//\//-}
	tmp=$(mktemp -d)
	git worktree add -q --detach "$tmp" "$ref"
	trap 'git worktree remove --force "$tmp"' EXIT # also when a build fails
	(
		cd "$tmp"
		export CGO_ENABLED=0 GOOS=linux GOARCH=amd64
		go build -ldflags="-s -w" -o "$dir/laya-bench-$name" ./cmd/laya-bench
		if [ "${TESTS:-0}" = 1 ]; then
			go test -c -ldflags="-s -w" -o "$dir/cuda.test-$name" ./backend/cuda
			echo "$tmp" >"$dir/srcroot-$name"
		fi
	)
	git worktree remove --force "$tmp"
	trap - EXIT
	echo "$ref -> $dir/laya-bench-$name ($(git rev-parse --short "$ref"))"
done
