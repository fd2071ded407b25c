#!/usr/bin/env bash
# Launches msd-run (or any msd MPI program) with the number of ranks its
# configuration needs and the Open MPI settings msd is measured with:
#   tools/mpirun.sh BUILD_DIR [msd-run arguments...]
# With MSD_PROGRAM set (e.g. "python3 examples/train_gpt.py"), that program
# runs on the ranks instead of msd-run, with the same arguments.
# Settings (override with MSD_MPIRUN_FLAGS):
#   --mca osc sm,pt2pt      one-sided reads through shared memory on one node
#                           (Open MPI's default component moves large MPI_Get
#                           at ~2 GB/s here, sm at ~30 GB/s); across nodes use
#                           OMPI_MCA_pml=ucx OMPI_MCA_osc=ucx instead
#   --mca mpi_yield_when_idle 1   waiting ranks yield the core
#   --oversubscribe         more ranks than cores is normal for a demo
#   --allow-run-as-root     containers often run as root
set -euo pipefail
build=$1
shift
run="$build/app/msd-run"
ranks=$("$run" --print-world-size "$@")
flags=${MSD_MPIRUN_FLAGS:---oversubscribe --mca mpi_yield_when_idle 1 --mca btl self,vader --mca osc sm,pt2pt}
[ "$(id -u)" -ne 0 ] || flags="--allow-run-as-root $flags"
# shellcheck disable=SC2086
exec mpirun -n "$ranks" $flags ${MSD_PROGRAM:-$run} "$@"
