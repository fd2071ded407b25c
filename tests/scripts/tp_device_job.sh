#!/usr/bin/env bash
# The client's nccl path wired end to end without a GPU
# (tests/mpi/tp_device_trainer.cc): tp = 2 groups whose clients deliver into
# a host-memory stand-in for a device sink agree on the nccl path (one log
# line per group), followers get headers only and their staged fields by a
# broadcast of the leader's packed buffer, every step's rebuilt batch has the
# leader's digest, and the job's batch digest equals a host-sink run's.
source "$(dirname "$0")/common.sh"
write_tiny_config "$WORK/job.ini"
mesh=(--topology.dp=2 --topology.tp=2 --job.steps=6 --output.log_level=info)
run_reference "$WORK/job.ini" "$WORK/host.json" "${mesh[@]}"
grep -q "by the host path (tp rank 0 has no CUDA device)" "$WORK/host.json.out" ||
  { echo "FAIL: the host run did not log the host path"; cat "$WORK/host.json.out"; exit 1; }
n=$("$MSD_RUN" --config "$WORK/job.ini" --print-world-size "${mesh[@]}")
status=0
timeout 120 $MSD_MPIEXEC -n "$n" "$MSD_BUILD/tests/tp_device_trainer" --config "$WORK/job.ini" "${mesh[@]}" \
  --summary-json "$WORK/device.json" >"$WORK/log" 2>&1 || status=$?
[ "$status" -eq 0 ] || { cat "$WORK/log"; echo "FAIL: tp_device_trainer exited $status"; exit 1; }
[ "$(grep -c 'by the nccl path' "$WORK/log")" -eq 2 ] ||
  { cat "$WORK/log"; echo "FAIL: not one nccl-path line per TP group"; exit 1; }
[ "$(grep -c 'digests match' "$WORK/log")" -eq 4 ] || { cat "$WORK/log"; echo "FAIL: a client did not check"; exit 1; }
[ "$(json_field "$WORK/device.json" batch_digest)" = "$(json_field "$WORK/host.json" batch_digest)" ] ||
  { echo "FAIL: the nccl path's batch digest differs from the host run's"; exit 1; }
grep 'by the nccl path' "$WORK/log" | head -1
echo "tp_device_job: 2 TP groups on the nccl path, batch digest as on the host path"
