#!/usr/bin/env bash
# Installs what is missing, builds with assertions on, and runs every test
# through ctest (unit tests, MPI tests at several rank counts, script tests,
# benchmarks at a tiny size, the readers' fuzzer). With MSD_ASAN=1 it then
# builds build/asan with AddressSanitizer + UBSan (MSD_SANITIZE) and runs the
# unit, MPI and fuzz tests there (the end-to-end scripts and benchmarks only in
# build/test: under the sanitizers they would take longer than CI allows).
# Extra arguments go to both ctest runs, e.g. -R tokenizer. Ends with one
# summary line per build: passed, skipped (which), failed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/tools/setup.sh"
# The reference tokenizers (npm packages tiktoken and gpt-tokenizer) for the
# exactness tests; without them those tests are reported as skipped.
"$root/tools/reference/install.sh" || echo "test: reference tokenizers unavailable; their tests will be skipped"
# Slurm for the sbatch tests: installed and started as a single node here
# (slurm_cluster starts its own two nodes). When it cannot start, its output
# says why and the Slurm tests are reported as skipped.
if [ "$(id -u)" -eq 0 ]; then
  slurm_out=$(mktemp)
  slurm_status=0
  timeout 300 "$root/tools/slurm-local.sh" >"$slurm_out" 2>&1 || slurm_status=$?
  if [ "$slurm_status" -ne 0 ]; then
    sed 's/^/  | /' "$slurm_out"
    why="exited with $slurm_status"
    [ "$slurm_status" -ne 124 ] || why="timed out after 300 s"
    echo "test: no local Slurm (tools/slurm-local.sh $why; its output above); the Slurm tests will be skipped"
  fi
  rm -f "$slurm_out"
fi

# run_suite NAME BUILD_DIR CMAKE_FLAGS TARGET CTEST_ARGS...: configures,
# builds TARGET and runs ctest; appends the summary line to $summaries;
# returns ctest's status.
summaries=""
run_suite() {
  local name=$1 build=$2 flags=$3 target=$4 start=$SECONDS status=0
  shift 4
  # shellcheck disable=SC2086
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMSD_ASSERTIONS=ON $flags >/dev/null
  cmake --build "$build" -j"$(nproc)" --target "$target"
  (cd "$build" && ctest --output-on-failure --timeout 600 "$@") | tee "$build/ctest.out" || status=$?
  local passed skipped failed skipped_names
  passed=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .* Passed' "$build/ctest.out" || true)
  skipped=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .*\*\*\*Skipped' "$build/ctest.out" || true)
  failed=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .*(\*\*\*Failed|\*\*\*Timeout|\*\*\*Exception|Not Run)' \
    "$build/ctest.out" || true)
  skipped_names=$(sed -nE 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([^ ]+) .*\*\*\*Skipped.*/\1/p' "$build/ctest.out" |
    paste -sd, -)
  summaries+="test: $name: $passed passed, $skipped skipped${skipped_names:+ ($skipped_names)}, $failed failed"
  summaries+=" ($((SECONDS - start)) s with the build)"$'\n'
  return "$status"
}

status=0
run_suite "build/test" "$root/build/test" "" all "$@" || status=$?
if [ "${MSD_ASAN:-0}" = 1 ]; then
  run_suite "build/asan (ASan+UBSan: unit, mpi, fuzz)" "$root/build/asan" "-DMSD_SANITIZE=ON" msd-core-tests \
    -L '^(unit|mpi|fuzz)$' "$@" || status=$?
fi
printf '%s' "$summaries"
exit "$status"
