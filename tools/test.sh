#!/usr/bin/env bash
# Installs what is missing, builds with assertions on, and runs every test
# through ctest (unit tests, MPI tests at several rank counts, script tests,
# benchmarks at a tiny size, the readers' fuzzer). With MSD_ASAN=1 it also
# builds build/asan with AddressSanitizer + UBSan (MSD_SANITIZE) and build/tsan
# with ThreadSanitizer (MSD_SANITIZE_THREAD), beside build/test at the lowest
# CPU priority, and then runs the cases that start threads (label thread) in
# build/tsan and the unit, MPI and fuzz tests in build/asan (the end-to-end
# scripts and benchmarks only in build/test: under the sanitizers they would
# take longer than CI allows). Extra arguments go to every ctest run, e.g. -R
# tokenizer. Ends with one summary line per build: passed, skipped (which),
# failed, and the build's and the tests' seconds.
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

# build_tree BUILD_DIR CMAKE_FLAGS TARGET: configures and builds TARGET, as a
# unity build (CMAKE_UNITY_BUILD: a target's files compiled a few at a time in
# one unit, each header parsed once per unit; docs/testing.md "Time").
build_tree() {
  local build=$1 flags=$2 target=$3
  # shellcheck disable=SC2086
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMSD_ASSERTIONS=ON -DCMAKE_UNITY_BUILD=ON $flags \
    >/dev/null
  cmake --build "$build" -j"$(nproc)" --target "$target"
}

# run_tests NAME BUILD_DIR BUILD_SECONDS CTEST_ARGS...: runs ctest (tests that
# need both cores, PROCESSORS 2, run alone; the others two at a time) and
# appends the summary line to $summaries; returns ctest's status.
summaries=""
run_tests() {
  local name=$1 build=$2 build_seconds=$3 start=$SECONDS status=0
  shift 3
  (cd "$build" && ctest --output-on-failure --timeout 600 -j"$(nproc)" "$@") | tee "$build/ctest.out" || status=$?
  local passed skipped failed skipped_names
  passed=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .* Passed' "$build/ctest.out" || true)
  skipped=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .*\*\*\*Skipped' "$build/ctest.out" || true)
  failed=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .*(\*\*\*Failed|\*\*\*Timeout|\*\*\*Exception|Not Run)' \
    "$build/ctest.out" || true)
  skipped_names=$(sed -nE 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([^ ]+) .*\*\*\*Skipped.*/\1/p' "$build/ctest.out" |
    paste -sd, -)
  summaries+="test: $name: $passed passed, $skipped skipped${skipped_names:+ ($skipped_names)}, $failed failed"
  summaries+=" (build $build_seconds s, tests $((SECONDS - start)) s)"$'\n'
  return "$status"
}

# kill_tree PID: ends PID and every process below it.
kill_tree() {
  local child
  for child in $(pgrep -P "$1" || true); do kill_tree "$child"; done
  kill "$1" 2>/dev/null || true
}

# With MSD_ASAN=1 the sanitizer trees build beside build/test, at the lowest
# CPU priority: they take only the CPU that build/test's build and tests leave
# idle (tests that wait on a timeout or a stalled peer), so the tests' timing
# is unchanged and the sanitizer builds overlap the tests instead of adding
# to them. build/asan: AddressSanitizer + UBSan, the unit, MPI and fuzz
# tests' executables (msd-core-tests). build/tsan: ThreadSanitizer, only the
# executables of the cases that start threads (msd-thread-tests, a few parts
# of lib/).
status=0
# build/tsan is the one plain (not unity) build: each of its files compiles
# on its own, with only the headers it includes.
declare -A san_flags=([asan]="-DMSD_SANITIZE=ON" [tsan]="-DMSD_SANITIZE_THREAD=ON -DCMAKE_UNITY_BUILD=OFF")
declare -A san_target=([asan]=msd-core-tests [tsan]=msd-thread-tests)
declare -A san_build=()
if [ "${MSD_ASAN:-0}" = 1 ]; then
  mkdir -p "$root/build"
  for san in tsan asan; do
    (
      renice -n 19 -p "$BASHPID" >/dev/null
      begin=$SECONDS
      build_tree "$root/build/$san" "${san_flags[$san]}" "${san_target[$san]}"
      echo "$((SECONDS - begin))" >"$root/build/$san-build.seconds"
    ) >"$root/build/$san-build.log" 2>&1 &
    san_build[$san]=$!
  done
  # A failed build/test ends this script: the sanitizer builds go with it.
  trap 'kill_tree "${san_build[asan]}"; kill_tree "${san_build[tsan]}"' EXIT
fi
# build/test compiles the CUDA sink too where the CUDA Toolkit is installed
# (MSD_WITH_CUDA, sm_90, the runtime linked statically): its host-side tests
# run in this ctest, and its device tests (label gpu) report as skipped
# without a GPU (docs/gpu.md). The sanitizer trees stay without CUDA.
test_flags="-DMSD_WITH_CUDA=OFF"
if [ -x /usr/local/cuda/bin/nvcc ]; then
  test_flags="-DMSD_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90"
fi
start=$SECONDS
build_tree "$root/build/test" "$test_flags" all
run_tests "build/test" "$root/build/test" "$((SECONDS - start))" "$@" || status=$?
# sanitizer_tests SAN NAME CTEST_ARGS...: waits for build/SAN's build, then
# runs its tests (or reports the failed build).
sanitizer_tests() {
  local san=$1 name=$2 start=$SECONDS build_status=0
  shift 2
  wait "${san_build[$san]}" || build_status=$?
  if [ "$build_status" -ne 0 ]; then
    tail -50 "$root/build/$san-build.log"
    summaries+="test: build/$san: the build failed (status $build_status; $root/build/$san-build.log)"$'\n'
    return 1
  fi
  echo "test: build/$san built in $(cat "$root/build/$san-build.seconds") s beside build/test (waited $((SECONDS - start)) s after the tests before)"
  run_tests "$name" "$root/build/$san" "$(cat "$root/build/$san-build.seconds")" "$@"
}
# build/tsan first: the smaller build ends first, and its tests overlap the
# rest of build/asan's build.
if [ "${MSD_ASAN:-0}" = 1 ]; then
  sanitizer_tests tsan "build/tsan (TSan: the cases that start threads)" -L '^thread$' "$@" || status=1
  sanitizer_tests asan "build/asan (ASan+UBSan: unit, mpi, fuzz)" -L '^(unit|mpi|fuzz)$' "$@" || status=1
  trap - EXIT
fi
printf '%s' "$summaries"
exit "$status"
