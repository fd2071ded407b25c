#!/usr/bin/env bash
# The device check (docs/gpu.md): on a machine with one GPU, no network and
# no MPI, builds msd-gpu-check from this checkout (tools/gpu-check/: CMake
# and the CUDA Toolkit only) and runs it: real batches built by msd's
# construct code go through the CUDA sink, and one JSON file reports H2D
# GB/s against cudaMemcpy of the same bytes from pinned memory, the fraction
# of copy time hidden under a synthetic compute kernel of the demo's step
# time, and the step time (keys: docs/gpu.md). Bounded to 8 minutes. The
# NCCL broadcast within a TP group needs one GPU per rank and MPI: the key
# nccl_tp_broadcast says why it was not measured here instead of a figure.
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
# The TP group's ncclBroadcast against an nccl-tests-style broadcast of the
# same bytes (aim: >= 0.8) needs a group of 2 ranks, each an MPI process
# with a GPU of its own; this check runs none and reports no figure.
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
[ "${gpus:-0}" -gt 0 ] || gpus=$(compgen -G '/dev/nvidia[0-9]*' | wc -l)
launcher=$(command -v mpirun || command -v mpiexec || true)
if [ "${gpus:-0}" -lt 2 ]; then
  reason="this machine has ${gpus:-0} GPU(s), and a TP group of 2 ranks needs one per rank"
elif [ -z "$launcher" ]; then
  reason="no MPI launcher (mpirun or mpiexec): the TP group's ranks are MPI processes"
else
  reason="msd-gpu-check runs no MPI job; with ${gpus} GPUs and MPI here, run the suite's gpu tests (ctest -L gpu: tp_nccl.np2, tp_nccl_job), which check the broadcast's bytes, not its bandwidth"
fi
sed -i '$ d' "$out"  # the closing brace
sed -i '$ s/$/,/' "$out"
printf '  "nccl_tp_broadcast": {"measured": false, "gpus": %s, "mpi": %s, "aim_vs_nccl_tests": 0.8, "reason": "%s"}\n}\n' \
  "${gpus:-0}" "$([ -n "$launcher" ] && echo true || echo false)" "$reason" >>"$out"
cat "$out"
echo "gpu-check: wrote $out in $SECONDS s"
