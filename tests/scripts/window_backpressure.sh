#!/usr/bin/env bash
# Issue 11, reproduction 1: a loader window far smaller than the planner's
# look-ahead. The window used to fill with later steps' samples before the
# earliest step's fitted, and the job waited forever; now requests go out in
# step order within the window's budget and the run completes with the same
# batch stream as a large window. A window that cannot hold one sample of
# job.max_sample_bytes is a configuration error before any work.
source "$(dirname "$0")/common.sh"
write_tiny_config "$WORK/job.ini"
args=(--topology.loaders=1 --job.steps=30 --job.prefetch_steps=50 --job.max_sample_bytes=65536)
run_job "$WORK/job.ini" "${args[@]}" --loader.window_mb=64 --summary-json "$WORK/large.json" >/dev/null 2>&1
ref=$(json_field "$WORK/large.json" batch_digest)
run_job "$WORK/job.ini" "${args[@]}" --loader.window_mb=1 --summary-json "$WORK/small.json" >"$WORK/small.out" 2>&1 ||
  { echo "FAIL: the 1 MiB window did not complete"; tail -20 "$WORK/small.out"; exit 1; }
digest=$(json_field "$WORK/small.json" batch_digest)
[ "$digest" = "$ref" ] || { echo "FAIL: the small window changed the stream ($digest vs $ref)"; exit 1; }
[ "$(json_field "$WORK/small.json" takeover_count)" = 0 ] || { echo "FAIL: a full window was taken for a failure"; exit 1; }
grep -q "missed its deadline" "$WORK/small.out" && { echo "FAIL: a full window was reported as a missed deadline"; exit 1; }

# Too small for one sample: exit status 2 before any work, naming the option.
rc=0
run_job "$WORK/job.ini" --loader.window_mb=1 --job.max_sample_bytes=2097152 >"$WORK/bad.out" 2>&1 || rc=$?
[ "$rc" = 2 ] || { echo "FAIL: window smaller than job.max_sample_bytes: exit status $rc, expected 2"; exit 1; }
grep -q "loader.window_mb" "$WORK/bad.out" || { echo "FAIL: the error does not name loader.window_mb"; cat "$WORK/bad.out"; exit 1; }
echo "window_backpressure: 1 MiB and 64 MiB windows give batch digest $ref; a window below job.max_sample_bytes exits 2"
