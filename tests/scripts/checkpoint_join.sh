#!/usr/bin/env bash
# A loader that stops between answering "ready" for a loader checkpoint and
# reporting in to write it: the planner tells every writer to skip, the late
# one finds "skip" on waking (it never enters the collective write alone),
# its shadow takes over, later checkpoints are written among the live
# loaders, and the stream equals a clean run's. fault.kind = checkpoint_stall
# makes loader 0 pause just after it answers the next checkpoint request
# ready (the one of step 20).
source "$(dirname "$0")/common.sh"
write_tiny_config "$WORK/job.ini" "[topology]" "shadow_loaders = 1"
sed -i 's/^steps = 8/steps = 70/' "$WORK/job.ini"
args=(--loader.deadline_ms=1000 --checkpoint.loader_every=20 --checkpoint.keep=100 --job.prefetch_steps=4)
run_reference "$WORK/job.ini" "$WORK/ref.json" "${args[@]}" --checkpoint.dir="$WORK/ref"
ref=$(json_field "$WORK/ref.json" batch_digest)

rc=0
TIMEOUT=120 run_job "$WORK/job.ini" "${args[@]}" --checkpoint.dir="$WORK/ckpt" --summary-json "$WORK/stall.json" \
  --fault.loader=0 --fault.kind=checkpoint_stall --fault.stall_ms=3000 --fault.step=10 >"$WORK/stall.out" 2>&1 || rc=$?
[ "$rc" = 0 ] || { echo "FAIL: exit status $rc, expected 0"; grep -v "bad sample" "$WORK/stall.out" | tail -20; exit 1; }
grep -q "loader checkpoint of step 20 skipped: loader 0 (world rank 1) did not report in" "$WORK/stall.out" ||
  { echo "FAIL: no skip of the checkpoint of step 20 naming loader 0"; grep -v "bad sample" "$WORK/stall.out" | tail -30; exit 1; }
[ ! -e "$WORK/ckpt/loaders-000000000020.h5" ] || { echo "FAIL: the skipped checkpoint was written"; exit 1; }
for step in 40 60; do
  [ -e "$WORK/ckpt/loaders-0000000000$step.h5" ] || { echo "FAIL: no loader checkpoint of step $step"; ls "$WORK/ckpt"; exit 1; }
done
digest=$(json_field "$WORK/stall.json" batch_digest)
[ "$digest" = "$ref" ] || { echo "FAIL: the stream changed ($digest vs $ref)"; exit 1; }
echo "checkpoint_join: step 20 skipped, takeovers $(json_field "$WORK/stall.json" takeover_count)," \
     "checkpoints of steps 40 and 60 written; digest $digest (clean run $ref)"
