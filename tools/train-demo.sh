#!/usr/bin/env bash
# The training demo: installs what is missing, builds msd and its Python
# package (Release), makes the embedded default dataset if absent, and trains
# the small GPT of examples/train_gpt.py on configs/train-demo.ini under
# mpirun (2 data-parallel client ranks), printing the loss every few steps.
#   tools/train-demo.sh [--steps N] [--summary-json FILE] [--build DIR] [--config FILE] [msd options...]
# --summary-json FILE: msd's summary (steps, batch_digest, ...) plus
# loss_first, loss_last and every step's loss. --build DIR: use that existing
# build (configured with MSD_PYTHON=ON) instead of building build/release.
# --config FILE: another configuration (default configs/train-demo.ini; the
# dataset is made in data/demo beside its folder when absent).
# `msd-run --config configs/train-demo.ini --steps N` gives the same batch_digest.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build/release"
configure=1
config="$root/configs/train-demo.ini"
source "$root/tools/demo-lib.sh"
demo_args "$@"
"$root/tools/setup.sh"
demo_build train-demo "$build" $configure msd-run msd-datagen msd_python
demo_data train-demo "$build" "$config"
echo "train-demo: training on $("$build/app/msd-run" --config "$config" --print-world-size "${args[@]}") MPI ranks"
# OMP_NUM_THREADS=1: the ranks share the cores, so torch must not spin extra threads.
PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}" OMP_NUM_THREADS=1 \
  MSD_PROGRAM="/usr/bin/python3 -m mpi4py $root/examples/train_gpt.py" \
  "$root/tools/mpirun.sh" "$build" --config "$config" "${args[@]}"
