#!/usr/bin/env bash
# Reads of loader windows across nodes, on one host: the settings
# `tools/mpirun.sh --multi-node` uses (UCX for messages and MPI_Get), with
# UCX limited to TCP and shared-memory transports off, so every read of a
# loader's window crosses the network stack as it would between nodes: by
# default one request and one reply per loader and step (the loaders say so
# in their debug log), and with topology.network_reads = one_sided an
# MPI_Get per piece. The batch stream (the batch digest chains every step's
# digest) must equal the shared-memory run's either way, and two-sided reads
# run a step ahead (the summary's steps_read_ahead). Exits 77 (reported as
# skipped) when this Open MPI has no UCX components.
source "$(dirname "$0")/common.sh"
if ! ompi_info 2>/dev/null | grep -q "MCA osc: ucx" || ! ompi_info 2>/dev/null | grep -q "MCA pml: ucx"; then
  echo "network_path: SKIPPED: this Open MPI has no UCX pml/osc components (ompi_info | grep -i ucx)"
  exit 77
fi
write_tiny_config "$WORK/job.ini"
run_job "$WORK/job.ini" --summary-json "$WORK/shm.json" >/dev/null
n=$("$MSD_RUN" --config "$WORK/job.ini" --print-world-size)
# tools/mpirun.sh --multi-node with UCX over TCP only (loopback is this host's network).
export UCX_TLS=tcp,self UCX_NET_DEVICES=lo UCX_WARN_UNUSED_ENV_VARS=n
flags="--allow-run-as-root --oversubscribe --mca mpi_yield_when_idle 1 --mca pml ucx --mca osc ucx --mca pml_ucx_tls any --mca pml_ucx_devices any --mca btl ^vader,openib"
flags="$flags -x UCX_TLS -x UCX_NET_DEVICES -x UCX_WARN_UNUSED_ENV_VARS"
want=$(json_field "$WORK/shm.json" batch_digest)
for reads in two_sided one_sided; do
  # shellcheck disable=SC2086
  MSD_MPIRUN_FLAGS="$flags" timeout 240 "$MSD_SOURCE/tools/mpirun.sh" --multi-node "$MSD_BUILD" --config "$WORK/job.ini" \
    --topology.network_reads=$reads --output.log_level=debug --summary-json "$WORK/$reads.json" >"$WORK/$reads.out" 2>&1 ||
    { tail -30 "$WORK/$reads.out"; echo "FAIL: the UCX/TCP run with $reads reads failed"; exit 1; }
  got=$(json_field "$WORK/$reads.json" batch_digest)
  [ -n "$want" ] && [ "$want" = "$got" ] ||
    { echo "FAIL: UCX over TCP with $reads reads delivered batch_digest $got, shared memory $want"; exit 1; }
  requests=$(grep -c "clients read it by request and reply" "$WORK/$reads.out" || true)
  if [ "$reads" = two_sided ] && [ "$requests" = 0 ]; then echo "FAIL: no loader answered read requests"; exit 1; fi
  if [ "$reads" = one_sided ] && [ "$requests" != 0 ]; then echo "FAIL: one_sided reads went by request"; exit 1; fi
  # Two-sided: a client requests step t + 1's bytes before it returns step t
  # whenever the plan is already in (the planner plans 2 steps ahead), so
  # some of the 7 steps after each client's first are read ahead.
  ahead=$(json_field "$WORK/$reads.json" steps_read_ahead)
  if [ "$reads" = two_sided ] && [ "$ahead" = 0 ]; then echo "FAIL: no step's reads were requested ahead"; exit 1; fi
  if [ "$reads" = one_sided ] && [ "$ahead" != 0 ]; then echo "FAIL: one_sided reads ran $ahead steps ahead"; exit 1; fi
  echo "network_path: $reads reads: $ahead client steps read ahead"
done
[ "$(json_field "$WORK/shm.json" steps_read_ahead)" = 0 ] || { echo "FAIL: direct reads were requested ahead"; exit 1; }
echo "network_path: $n ranks, pml/osc ucx over tcp, two-sided and one-sided reads: batch_digest $got as over shared memory"
