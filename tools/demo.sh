#!/usr/bin/env bash
# The demo: installs what is missing, builds (Release), makes the embedded
# default dataset if absent, runs configs/demo.ini under mpirun and prints the
# summary. Extra arguments go to msd-run, e.g.
#   tools/demo.sh --loaders 2 --summary-json out.json
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build/release"
"$root/tools/setup.sh"
echo "demo: building (Release) in $build"
mkdir -p "$build"
if ! { cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DMSD_BUILD_TESTS=OFF &&
       cmake --build "$build" -j"$(nproc)" --target msd-run msd-datagen msd-bench msd-replay; } >"$build/build.log" 2>&1; then
  tail -n 40 "$build/build.log"
  echo "demo: the build failed; the whole log is $build/build.log" >&2
  exit 1
fi
if [ ! -f "$root/data/demo/MANIFEST" ]; then
  echo "demo: generating the default dataset in data/demo"
  "$build/app/msd-datagen" --out "$root/data/demo" --scale demo --seed 1
fi
echo "demo: running configs/demo.ini on $("$build/app/msd-run" --config "$root/configs/demo.ini" --print-world-size "$@") MPI ranks"
"$root/tools/mpirun.sh" "$build" --config "$root/configs/demo.ini" "$@"
