# shellcheck shell=bash
# Sourced by run.sh and paired.sh: the options they share (environment, with
# these defaults; see either script's comment), the core count, and the
# synthetic checkpoints of PRESETS written into WORK once.
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=${BIN:-$(dirname "$0")/bin}
WORK=${WORK:-${TMPDIR:-/tmp}/laya-parity}
OUT=${OUT:-$WORK/bench}
CORES=${CORES:-"2 all"}
PRESETS=${PRESETS:-"english multilingual"}
QUESTIONS=${QUESTIONS:-"1 10"}
mkdir -p "$WORK" "$OUT"
# shellcheck disable=SC2034 # the sourcing script reads ALL and OUT
ALL=$(nproc)
for preset in $PRESETS; do
  "$HERE/synth.sh" "$BIN" "$WORK" "$preset"
done
