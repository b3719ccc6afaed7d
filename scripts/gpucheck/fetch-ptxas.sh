#!/usr/bin/env bash
# Prints the path of an NVIDIA ptxas for TestKernelsAssembleWithPtxas
# (backend/cuda), which assembles the cuda kernels' PTX on a machine with no GPU
# and no CUDA toolkit: `export LAYA_PTXAS=$(bash scripts/gpucheck/fetch-ptxas.sh)`.
#
# The binary comes from Debian non-free's nvidia-cuda-toolkit package of the
# suite LAYA_PTXAS_SUITE names, default trixie: CUDA 12.4, whose ptxas knows
# sm_80 to sm_90a and PTX ISA 8.4 (wgmma, the bulk and tensor copies, the
# cluster barriers' .relaxed), where bookworm's CUDA 11.8 stops at PTX 7.8; the
# package holds NVIDIA's own builds, and its ptxas runs on bookworm too. apt
# runs with a private source list and state under the cache directory
# (LAYA_PTXAS_DIR, default $XDG_CACHE_HOME or ~/.cache, then
# laya-metal/ptxas/SUITE), so the system's apt sources and state are not
# touched (its apt.conf.d, proxies included, still applies), and the package is
# unpacked there, not installed. Later runs reuse it; concurrent runs wait for
# each other.
#
# With --sass it also unpacks the package's cuobjdump and nvdisasm beside it
# (51 MB more), which disassemble a cubin to SASS without a GPU
# (scripts/gpucheck/ptxas-resources.sh's SASS_DIR).
set -euo pipefail
tools=(ptxas)
if [ "${1:-}" = --sass ]; then
  tools+=(cuobjdump nvdisasm)
fi

suite="${LAYA_PTXAS_SUITE:-trixie}"
dir="${LAYA_PTXAS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/laya-metal/ptxas/$suite}"
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
bin="$dir/root/usr/bin/ptxas"
exec 9>"$dir/lock"
flock 9
have=true
for t in "${tools[@]}"; do
  [ -x "$dir/root/usr/bin/$t" ] || have=false
done
if $have && "$bin" --version >/dev/null 2>&1; then
  echo "$bin"
  exit 0
fi

keyring=/usr/share/keyrings/debian-archive-keyring.gpg
signed=""
if [ -f "$keyring" ]; then
  signed="[signed-by=$keyring] "
fi
rm -rf "$dir"/download.* "$dir/root.new"
mkdir -p "$dir/apt/lists/partial" "$dir/apt/cache/archives/partial"
echo "deb ${signed}http://deb.debian.org/debian $suite non-free" >"$dir/apt/sources.list"
opts=(-o "Dir::Etc::SourceList=$dir/apt/sources.list" -o Dir::Etc::SourceParts=/nonexistent
  -o "Dir::State::Lists=$dir/apt/lists" -o "Dir::Cache=$dir/apt/cache" -o APT::Sandbox::User=root -qq)
apt-get "${opts[@]}" --error-on=any update >&2
tmp=$(mktemp -d "$dir/download.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get "${opts[@]}" download nvidia-cuda-toolkit >&2)
mkdir -p "$dir/root.new"
dpkg-deb --fsys-tarfile "$tmp"/nvidia-cuda-toolkit_*.deb | tar -x -C "$dir/root.new" "${tools[@]/#/./usr/bin/}"
"$dir/root.new/usr/bin/ptxas" --version >/dev/null
rm -rf "$dir/root"
mv "$dir/root.new" "$dir/root"
echo "$bin"
