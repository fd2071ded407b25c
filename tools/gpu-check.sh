#!/usr/bin/env bash
# The device check (docs/gpu.md): on a machine with one GPU, no network and
# no MPI, builds msd-gpu-check from this checkout (tools/gpu-check/: CMake
# and the CUDA Toolkit only) and runs it: real batches built by msd's
# construct code go through the CUDA sink, and one JSON file reports H2D
# GB/s against cudaMemcpy of the same bytes from pinned memory, the fraction
# of copy time hidden under a synthetic compute kernel of the demo's step
# time, and the step time (keys: docs/gpu.md). Bounded to 8 minutes.
# Where no GPU is present it prints one line saying so and exits 77 (the
# suite's skip code) before building anything.
#
#   tools/gpu-check.sh [--out FILE] [--build DIR] [--bin PATH] [--compute-ms MS] [--steps N]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/build/gpu-check/gpu-check.json"
build="$root/build/gpu-check"
bin=""
compute_ms=20  # the demo's emulated compute per step (docs/gpu.md)
steps=200
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --compute-ms) compute_ms=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    *) echo "usage: tools/gpu-check.sh [--out FILE] [--build DIR] [--bin PATH] [--compute-ms MS] [--steps N]" >&2; exit 2 ;;
  esac
done
skip() {
  echo "gpu-check: skipped: $1" >&2
  exit 77
}
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi -L 2>/dev/null | grep -q '^GPU ' || skip "no GPU (nvidia-smi -L lists none)"
elif ! compgen -G '/dev/nvidia[0-9]*' >/dev/null; then
  skip "no GPU (no nvidia-smi and no /dev/nvidia* device)"
fi
deadline=$((SECONDS + 480))
if [ -z "$bin" ]; then
  command -v cmake >/dev/null || { echo "gpu-check: needs cmake (3.20 or newer)" >&2; exit 2; }
  [ -x /usr/local/cuda/bin/nvcc ] || command -v nvcc >/dev/null ||
    { echo "gpu-check: needs the CUDA Toolkit (nvcc under /usr/local/cuda/bin or on PATH)" >&2; exit 2; }
  cmake -S "$root/tools/gpu-check" -B "$build" -DCMAKE_BUILD_TYPE=Release >"$build.configure.log" 2>&1 ||
    { cat "$build.configure.log" >&2; exit 1; }
  cmake --build "$build" -j"$(nproc)"
  bin="$build/msd-gpu-check"
fi
mkdir -p "$(dirname "$out")"
left=$((deadline - SECONDS))
[ "$left" -gt 60 ] || { echo "gpu-check: the build left under a minute of the 8" >&2; exit 1; }
status=0
timeout "$left" "$bin" --compute-ms "$compute_ms" --steps "$steps" --out "$out" || status=$?
[ "$status" -eq 0 ] || exit "$status"
cat "$out"
echo "gpu-check: wrote $out in $SECONDS s"
