#!/usr/bin/env bash
# Issue 11, reproduction 2: a loader SIGSTOPped mid-run while loader
# checkpoints are on. The shadow takes over, loader checkpoints go on among
# the live loaders, the summary leaves the stopped rank out, and the job ends
# soon after the last step with exit status 0 (rank 0 ends it with MPI_Abort,
# since MPI_Finalize would wait for the stopped process; mpirun kills it).
source "$(dirname "$0")/common.sh"
write_tiny_config "$WORK/job.ini" "[topology]" "shadow_loaders = 1"
sed -i 's/^steps = 8/steps = 150/' "$WORK/job.ini"
args=(--loader.deadline_ms=2000 --checkpoint.loader_every=20 --checkpoint.keep=100)
run_reference "$WORK/job.ini" "$WORK/ref.json" "${args[@]}" --checkpoint.dir="$WORK/ref"
ref=$(json_field "$WORK/ref.json" batch_digest)

run_job "$WORK/job.ini" "${args[@]}" --checkpoint.dir="$WORK/ckpt" --summary-json "$WORK/stop.json" \
  --output.progress_every=1 --output.log_level=info >"$WORK/stop.out" 2>&1 &
job=$!
trap 'kill $job 2>/dev/null || true; rm -rf "$WORK"' EXIT
# Stop world rank 1 (loader 0) once its part of the first loader checkpoint
# exists, a few seconds in.
pid=
wait_until 60 "the process of world rank 1" found_rank_pid "$WORK/job.ini" 1
wait_until 30 "the loader checkpoint of step 20" test -e "$WORK/ckpt/loaders-000000000020-00000.h5"
stopped_at=$(now_s)
kill -STOP "$pid"
wait_until 120 "the summary after the stop" test -s "$WORK/stop.json"
summary_at=$(now_s)
rc=0
wait $job || rc=$?
ended_at=$(now_s)
kill -KILL "$pid" 2>/dev/null || true  # in case mpirun left it behind
[ "$rc" = 0 ] || { echo "FAIL: exit status $rc, expected 0"; tail -30 "$WORK/stop.out"; exit 1; }
digest=$(json_field "$WORK/stop.json" batch_digest)
[ "$digest" = "$ref" ] || { echo "FAIL: the stream changed ($digest vs $ref)"; exit 1; }
[ "$(json_field "$WORK/stop.json" takeover_count)" = 1 ] || { echo "FAIL: expected one takeover"; exit 1; }
latency=$(grep -o '"latency_s":[0-9.e+-]*' "$WORK/stop.json" | head -1 | cut -d: -f2)
last=$(ls "$WORK/ckpt"/loaders-*.h5 | tail -1)
[ "$last" = "$WORK/ckpt/loaders-000000000140-00002.h5" ] || { echo "FAIL: loader checkpoints stopped at $last"; ls "$WORK/ckpt"; exit 1; }
awk -v a="$summary_at" -v b="$ended_at" 'BEGIN { exit !(b - a <= 10) }' ||
  { echo "FAIL: the job took more than 10 s to end after its summary"; exit 1; }
echo "stuck_loader: takeover ${latency}s after the loader went quiet; summary $(echo "$summary_at - $stopped_at" | bc) s" \
     "after the stop, exit $(echo "$ended_at - $summary_at" | bc) s after the summary; status $rc;" \
     "loader checkpoints through $(basename "$last"); digest $digest"
