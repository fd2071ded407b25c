#!/usr/bin/env bash
# The demo: installs what is missing, builds (Release), makes the embedded
# default dataset if absent, runs configs/demo.ini under mpirun and prints the
# summary; its per-step metrics and their plot go to build/release/demo-out/
# (metrics.jsonl, metrics.png; docs/metrics.md). Extra arguments go to
# msd-run, e.g.
#   tools/demo.sh --loaders 2 --summary-json out.json
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build/release"
"$root/tools/setup.sh"
source "$root/tools/demo-lib.sh"
demo_build demo "$build" 1 msd-run msd-datagen msd-bench msd-replay
demo_data demo "$build"
echo "demo: running configs/demo.ini on $("$build/app/msd-run" --config "$root/configs/demo.ini" --print-world-size "$@") MPI ranks"
out="$build/demo-out"
demo_run demo "$build" "$out" "$root/configs/demo.ini" "$@"
