#!/usr/bin/env bash
# A tp = 2 job whose clients deliver into CUDA sinks (label gpu;
# tests/gpu/tp_nccl_trainer.cc): the group takes the nccl path, each
# follower's batch arrives on its device by ncclBroadcast and matches the
# leader's digest, and the job's batch digest is the host run's. Skipped
# where a rank sees fewer than 2 CUDA devices.
source "$(dirname "$0")/common.sh"
write_tiny_config "$WORK/job.ini"
mesh=(--topology.dp=1 --topology.tp=2 --job.steps=6 --output.log_level=info)
n=$("$MSD_RUN" --config "$WORK/job.ini" --print-world-size "${mesh[@]}")
status=0
timeout 120 $MSD_MPIEXEC -n "$n" "$MSD_BUILD/tests/tp_nccl_trainer" --config "$WORK/job.ini" "${mesh[@]}" \
  --summary-json "$WORK/nccl.json" >"$WORK/log" 2>&1 || status=$?
cat "$WORK/log"
if [ "$status" -eq 77 ]; then
  grep -q '^tp_nccl_trainer: skipped:' "$WORK/log" || { echo "FAIL: exit 77 without the skip line"; exit 1; }
  exit "$MSD_SKIP_CODE"
fi
[ "$status" -eq 0 ] || { echo "FAIL: tp_nccl_trainer exited $status"; exit 1; }
run_reference "$WORK/job.ini" "$WORK/host.json" "${mesh[@]}"
grep -q "by the nccl path" "$WORK/log" || { echo "FAIL: no log line naming the nccl path"; exit 1; }
[ "$(grep -c 'digests match' "$WORK/log")" -eq 2 ] || { echo "FAIL: not both TP ranks checked their batches"; exit 1; }
[ "$(json_field "$WORK/nccl.json" batch_digest)" = "$(json_field "$WORK/host.json" batch_digest)" ] ||
  { echo "FAIL: the nccl path's batch digest differs from the host run's"; exit 1; }
echo "tp_nccl_job: nccl path, batch digest as on the host path"
