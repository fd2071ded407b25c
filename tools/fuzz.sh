#!/usr/bin/env bash
# Runs the readers' mutation fuzzer (tests/fuzz/msd_fuzz.cc) for longer than
# the suite's bounded run: every input format msd parses, or the ones named.
#   tools/fuzz.sh [--seconds N] [--format NAME[,NAME...]] [--seed S] [--asan]
# Formats: jsonl wds jpeg indexed tiktoken ini checkpoint trace. --seconds is
# the total, split evenly between the formats (default 300). --asan builds and
# runs it under AddressSanitizer + UBSan (build/asan). Findings (inputs that
# crash, hang, break a reader's contract or are rejected without a clear
# error) are kept under build/<dir>/fuzz-work; the exit status is 1 then.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build/test"
args=()
seconds=300
while (($#)); do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --asan) build="$root/build/asan"; shift ;;
    --format|--seed) args+=("$1" "$2"); shift 2 ;;
    -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "fuzz.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DMSD_ASSERTIONS=ON)
[ "$build" = "$root/build/asan" ] && flags+=(-DMSD_SANITIZE=ON)
cmake -S "$root" -B "$build" "${flags[@]}" >/dev/null
cmake --build "$build" -j"$(nproc)" --target msd-fuzz
rm -rf "$build/fuzz-work"
exec "$build/tests/msd-fuzz" --seconds "$seconds" --work "$build/fuzz-work" "${args[@]}"
