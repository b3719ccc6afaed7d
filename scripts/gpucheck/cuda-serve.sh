#!/usr/bin/env bash
# laya serve on the cuda backend under load, from binaries that
# scripts/gpucheck/cuda-build.sh made. Run from the repository's root on a
# CUDA host (driver, NVRTC, cuBLAS); it needs nothing else but BIN and the
# request body under testdata/:
#
#   bash BIN/cuda-serve.sh BIN OUT
#
# For each preset it writes a synthetic checkpoint once (laya synth, f16,
# seed 1, under WORK), starts `laya serve --backend cuda` on it through
# serveload, and posts BODY from LEVELS clients at a time, DURATION per level.
# Writes to OUT:
#   serve-load-cuda.csv  serveload's rows (BENCHMARKS.md's table, see
#                        scripts/README.md for how it lands there)
#   run.json             the run's date, commit, machine and commands, a draft
#                        for benchmarks/results/<date>-<commit>-serve-cuda/
#   summary.md           the same rows as a Markdown table, the best level
#   serve-<preset>.log   serveload's and laya serve's stderr
# and exits non-zero, saying why in one line, when a checkpoint cannot be
# written or laya serve does not start.
#
# Environment:
#   LAYA_CUDA           the backend's options; precision=fp32|fp16|bf16|fp16x2
#                       (default: the backend's default precision)
#   LEVELS              concurrencies (default 1,2,4,8,16,32,64,128)
#   DURATION            time per level (default 5s)
#   WARMUP              requests sent before the first level (default 5)
#   READY_TIMEOUT       how long laya serve may take to load (default 3m)
#   PRESETS             laya synth presets (default "english multilingual")
#   BODY                request body (default testdata/requests/refund.json,
#                       one short question)
#   SERVE_ARGS          more laya serve flags, space-separated ("--batch-size 64")
#   WORK                where checkpoints are written (default /tmp/laya-cuda-serve)
#   LAYA_SERVE_BACKEND  the backend to serve on (default cuda; cpu checks this
#                       script on a machine without a GPU)
# laya serve's own settings (LAYA_BATCH_MAX, LAYA_QUEUE_MAX, ...) pass through;
# the ones set are recorded in run.json.
set -uo pipefail
if [ $# -ne 2 ]; then
	echo "usage: bash BIN/cuda-serve.sh BIN OUT (from the repository's root)" >&2
	exit 2
fi
bin=$(cd "$1" && pwd) || exit 2
out=$2
backend=${LAYA_SERVE_BACKEND:-cuda}
levels=${LEVELS:-1,2,4,8,16,32,64,128}
duration=${DURATION:-5s}
warmup=${WARMUP:-5}
presets=${PRESETS:-english multilingual}
body=${BODY:-testdata/requests/refund.json}
work=${WORK:-/tmp/laya-cuda-serve}
read -r -a serve_args <<<"${SERVE_ARGS:-}"

fail() {
	echo "cuda-serve: $*" >&2
	[ -n "${started:-}" ] && echo "FAILED: $*" >>"$out/summary.md"
	exit 1
}
for f in laya serveload; do
	[ -x "$bin/$f" ] || fail "$bin/$f is missing: build BIN with scripts/gpucheck/cuda-build.sh"
done
[ -f "$body" ] || fail "$body not found: run from the repository's root or set BODY"
mkdir -p "$out" "$work" || exit 1
csv=$out/serve-load-cuda.csv
rm -f "$csv"
commit=$(cat "$bin/commit" 2>/dev/null || echo unknown)

# The precision the rows were measured in: the last precision= in LAYA_CUDA
# wins, as in the backend's option parsing; otherwise the default that
# cuda-build.sh read from the source it built.
precision=
precision_note=
if [ "$backend" = cuda ]; then
	precision=$(printf '%s\n' "${LAYA_CUDA:-}" | tr ',' '\n' | sed -n 's/^ *precision *= *//p' | tail -n 1 | tr '[:upper:]' '[:lower:]')
	if [ -z "$precision" ]; then
		precision=$(cat "$bin/cuda-precision" 2>/dev/null)
		precision_note=" (the backend's default)"
		[ -n "$precision" ] || precision="default precision"
	fi
	# Refinement (fp16x2's default) likewise, when LAYA_CUDA names it.
	refine=$(printf '%s\n' "${LAYA_CUDA:-}" | tr ',' '\n' | sed -n 's/^ *refine *= *//p' | tail -n 1)
	[ -z "$refine" ] || precision="$precision refine=$refine"
fi
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1 | sed 's/, */ (driver /; s/$/)/')
machine="${gpu:-a machine where nvidia-smi found no GPU}, $(nproc) CPU cores"

# shellwords prints its arguments as a shell would read them back, with BIN
# for this script's binaries' directory.
shellwords() {
	local a line=
	for a in "$@"; do
		a=${a/#"$bin"\//BIN/}
		if [[ $a =~ ^[A-Za-z0-9_./,=:+-]+$ ]]; then
			line+=" $a"
		else
			line+=" '$(printf '%s' "$a" | sed "s/'/'\\\\''/g")'"
		fi
	done
	printf '%s' "${line# }"
}

# json quotes a string for run.json.
json() {
	printf '"%s"' "$(printf '%s' "$1" | tr '\n\t\r' '   ' | sed 's/\\/\\\\/g; s/"/\\"/g')"
}

# laya serve's settings, recorded in run.json: all set but this script's own
# and anything secret.
settings=
for v in $(env | sed -n 's/^\(LAYA_[A-Z0-9_]*\)=.*/\1/p' | grep -vE '^LAYA_(SERVE_BACKEND|[A-Z0-9_]*(KEY|TOKEN|SECRET|PASSWORD|URL))$' | sort); do
	settings+="$v=$(shellwords "${!v}") "
done
envs=$settings
for v in LAYA_SERVE_BACKEND LEVELS DURATION WARMUP READY_TIMEOUT PRESETS BODY SERVE_ARGS WORK; do
	[ -n "${!v:-}" ] && envs+="$v=$(shellwords "${!v}") "
done
settings=${settings% }
[ -n "$settings" ] || settings="default settings"
{
	echo "# laya serve --backend $backend${precision:+ in $precision$precision_note} under load, commit $commit"
	echo
	echo "$machine; $body; $duration per level; warm-up $warmup requests; $settings${SERVE_ARGS:+; laya serve $SERVE_ARGS}"
	echo
} >"$out/summary.md"
started=1

commands=("scripts/gpucheck/cuda-build.sh .gpu-cuda" "${envs}bash BIN/cuda-serve.sh BIN OUT")
rows=()
for preset in $presets; do
	model=$work/$preset
	if [ ! -f "$model/model.safetensors" ]; then
		# Written beside and renamed, so that an interrupted write is redone.
		rm -rf "$model.part"
		if ! "$bin/laya" synth --preset "$preset" --out "$model.part" >"$out/synth-$preset.log" 2>&1; then
			fail "laya synth --preset $preset: $(tail -n 1 "$out/synth-$preset.log")"
		fi
		mv "$model.part" "$model" || fail "cannot rename $model.part"
	fi
	label="synthetic $preset ("
	[ "$preset" != tiny ] && label+="full-size, "
	label+="f16)"
	[ -n "$precision" ] && label+=", $precision"
	args=(-laya "$bin/laya" -model "$model" -label "$label" -backend "$backend" -body "$body"
		-c "$levels" -duration "$duration" -warmup "$warmup" -ready-timeout "${READY_TIMEOUT:-3m}" -load "$csv")
	for a in "${serve_args[@]}"; do
		args+=("-serve-arg=$a")
	done
	commands+=("$(shellwords "$bin/laya" synth --preset "$preset" --out "$model")" "$(shellwords "$bin/serveload" "${args[@]}")")
	echo "$label: serving on $backend, levels $levels, $duration each" >&2
	if ! "$bin/serveload" "${args[@]}" >"$out/serve-$preset.txt" 2>"$out/serve-$preset.log"; then
		fail "$preset: $(grep '^serveload: ' "$out/serve-$preset.log" | tail -n 1 | cut -c 1-600) (log: $out/serve-$preset.log)"
	fi
	cat "$out/serve-$preset.txt" >&2
	rows+=("$out/serve-$preset.txt")
done

# serveload prints each row with its fields joined by two spaces.
{
	echo "| checkpoint | backend | clients | answered | req/s | questions/s | P50 ms | P99 ms | statuses | mean batch | peak RSS MB |"
	echo "|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|"
	awk -F '  ' 'NF == 11 { line = "|"; for (i = 1; i <= NF; i++) line = line " " $i " |"; print line }' "${rows[@]}"
	echo
	awk -F '  ' 'NF == 11 && !($1 in best) { order[++n] = $1; best[$1] = -1 }
		NF == 11 && $5 + 0 > best[$1] { best[$1] = $5 + 0; line[$1] = $5 " req/s (" $6 " questions/s) at c=" $3 ", P50 " $7 " ms, P99 " $8 " ms" }
		END { for (i = 1; i <= n; i++) print "- " order[i] ": most " line[order[i]] }' "${rows[@]}"
} >>"$out/summary.md"

{
	echo "{"
	echo " \"date\": $(json "$(date -u +%F)"),"
	echo " \"time\": $(json "$(date -u +%H:%M)"),"
	echo " \"commit\": $(json "$commit"),"
	echo " \"machine\": $(json "$machine"),"
	echo " \"software\": $(json "laya serve --backend $backend${precision:+ in $precision$precision_note}, $settings${SERVE_ARGS:+, flags $SERVE_ARGS}, on loopback; synthetic checkpoints (laya synth, f16, seed 1: $presets); each request $body"),"
	echo " \"commands\": ["
	for i in "${!commands[@]}"; do
		sep=,
		[ "$i" = $((${#commands[@]} - 1)) ] && sep=
		echo "  $(json "${commands[$i]}")$sep"
	done
	echo " ],"
	echo " \"transcribed\": false,"
	echo " \"notes\": $(json "One run of each level, $duration each after $warmup warm-up requests. req/s counts 200s over the level's whole time, the drain of requests in flight included; mean batch is laya_batch_size (requests per forward pass) over the level; peak RSS is the server's host memory, not the GPU's.")"
	echo "}"
} >"$out/run.json"
cat "$out/summary.md"
