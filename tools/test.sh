#!/usr/bin/env bash
# Installs what is missing, builds with assertions on, and runs every test
# through ctest (unit tests, MPI tests at several rank counts, script tests,
# benchmarks at a tiny size). Extra arguments go to ctest, e.g. -R tokenizer.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build/test"
"$root/tools/setup.sh"
# The reference tokenizers (npm packages tiktoken and gpt-tokenizer) for the
# exactness tests; the tests say so and skip those parts when npm is missing.
"$root/tools/reference/install.sh" || echo "test: reference tokenizers unavailable; their checks will be skipped"
# A single-node Slurm for the sbatch test (skipped when it cannot start).
if [ "$(id -u)" -eq 0 ]; then
  timeout 120 "$root/tools/slurm-local.sh" >/dev/null 2>&1 || echo "test: no local Slurm; the Slurm test will be skipped"
fi
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMSD_ASSERTIONS=ON >/dev/null
cmake --build "$build" -j"$(nproc)"
cd "$build"
ctest --output-on-failure --timeout 600 "$@"
