#!/usr/bin/env bash
# The demo: installs what is missing, builds (Release), makes the embedded
# default dataset if absent, runs configs/demo.ini under mpirun and prints the
# summary; its per-step metrics and their plot go to build/release/demo-out/
# (metrics.jsonl, metrics.png; docs/metrics.md). Extra arguments go to
# msd-run, e.g.
#   tools/demo.sh --loaders 2 --summary-json out.json
# except --build DIR (an existing build, used as it is, instead of
# build/release) and --config FILE (another configuration; the dataset is made
# in data/demo beside its folder when absent).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build/release"
configure=1
config="$root/configs/demo.ini"
source "$root/tools/demo-lib.sh"
demo_args "$@"
"$root/tools/setup.sh"
demo_build demo "$build" $configure msd-run msd-datagen msd-bench msd-replay
demo_data demo "$build" "$config"
echo "demo: running $(basename "$config") on $("$build/app/msd-run" --config "$config" --print-world-size "${args[@]}") MPI ranks"
out="$build/demo-out"
demo_run demo "$build" "$out" "$config" "${args[@]}"
