#!/usr/bin/env bash
# Launches msd-run (or any msd MPI program) with the number of ranks its
# configuration needs and the Open MPI settings msd is measured with:
#   tools/mpirun.sh [--multi-node] BUILD_DIR [msd-run arguments...]
# With MSD_PROGRAM set (e.g. "python3 -m mpi4py examples/train_gpt.py"), that program
# runs on the ranks instead of msd-run, with the same arguments.
# One node (default; override with MSD_MPIRUN_FLAGS):
#   --mca osc sm,pt2pt      one-sided reads through shared memory on one node
#                           (Open MPI's default component moves large MPI_Get
#                           at ~2 GB/s here, sm at ~30 GB/s)
#   --mca btl self,vader    messages through shared memory
# --multi-node (docs/multi-node.md):
#   --mca pml ucx --mca osc ucx,sm   UCX carries messages and MPI_Get: a
#                           true one-sided read on RDMA networks (no help from
#                           the loader's CPU), shared memory between ranks of
#                           one node, TCP where nothing better exists; sm gives
#                           the node-shared windows TP groups share batches in
#   --mca pml_ucx_tls any --mca pml_ucx_devices any   Open MPI 4.1 otherwise
#                           refuses UCX unless it sees an InfiniBand/RoCE
#                           transport ("PML ucx cannot be selected" on TCP)
#   -x UCX_*                UCX settings in this environment reach every node
#                           (UCX_TLS=tcp,self forces the network path on one host)
# Both:
#   --mca mpi_yield_when_idle 1   waiting ranks yield the core
#   --oversubscribe         more ranks than cores is normal for a demo
#   --allow-run-as-root     containers often run as root
set -euo pipefail
multi_node=0
if [ "${1:-}" = --multi-node ]; then
  multi_node=1
  shift
fi
build=$1
shift
run="$build/app/msd-run"
ranks=$("$run" --print-world-size "$@")
if [ "$multi_node" = 1 ]; then
  default="--oversubscribe --mca mpi_yield_when_idle 1 --mca pml ucx --mca osc ucx,sm --mca pml_ucx_tls any --mca pml_ucx_devices any --mca btl ^vader,openib"
  for var in $(env | grep -o '^UCX_[A-Z_]*' || true); do default="$default -x $var"; done
else
  default="--oversubscribe --mca mpi_yield_when_idle 1 --mca btl self,vader --mca osc sm,pt2pt"
fi
flags=${MSD_MPIRUN_FLAGS:-$default}
[ "$(id -u)" -ne 0 ] || flags="--allow-run-as-root $flags"
# shellcheck disable=SC2086
exec mpirun -n "$ranks" $flags ${MSD_PROGRAM:-$run} "$@"
