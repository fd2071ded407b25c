#!/usr/bin/env bash
# Resume on another mesh: a dp 4 job SIGKILLed after a checkpoint resumes at
# dp 2 x tp 2, which is SIGKILLed in turn and resumes at dp 2. From each
# resume step on, every step holds exactly the documents of the uninterrupted
# dp 4 run (step_document_digests); only their placement follows the new
# mesh (step_digests differ). A change the stream cannot survive
# (job.global_batch) and a trace of another mesh are refused, naming the
# option.
source "$(dirname "$0")/common.sh"
steps=20
write_tiny_config "$WORK/job.ini"
sed -i -e "s/^steps = .*/steps = $steps/" -e "s/^time_scale = .*/time_scale = 30/" "$WORK/job.ini"
dp4=(--topology.dp=4 --topology.tp=1)
# The killed runs need slow steps (time_scale 30) for the kill to land
# mid-run; the others run without emulated compute (same batches).
fast=(--emulator.time_scale=0)
# The trace records one mesh's plans: a resume on another writes a new one.
dp2tp2=(--topology.dp=2 --topology.tp=2 --checkpoint.trace="$WORK/trace-dp2tp2.h5")
dp2=(--topology.dp=2 --topology.tp=1 --checkpoint.trace="$WORK/trace-dp2.h5")

# digests FILE KEY: the array KEY of a summary, one value a line.
digests() { grep -o "\"$2\":\[[^]]*\]" "$1" | tr -d '[]"' | cut -d: -f2 | tr ',' '\n'; }

run_job "$WORK/job.ini" "${fast[@]}" "${dp4[@]}" --summary-json "$WORK/full.json" >/dev/null 2>&1
full=$(digests "$WORK/full.json" step_document_digests)
[ "$(echo "$full" | grep -c .)" = $steps ] || { echo "FAIL: the dp 4 run reported $(echo "$full" | grep -c .) document digests"; exit 1; }

# kill_after STEP [msd-run options]: runs the job on $WORK/ckpt and SIGKILLs
# its world rank 3 (a client) once the planner checkpoint of STEP exists.
kill_after() {
  local step=$1 n victim="" pid
  shift
  n=$("$MSD_RUN" --config "$WORK/job.ini" --checkpoint.dir="$WORK/ckpt" --print-world-size "$@")
  timeout 120 $MSD_MPIEXEC -n "$n" "$MSD_RUN" --config "$WORK/job.ini" --checkpoint.dir="$WORK/ckpt" \
    --checkpoint.planner_every=4 --output.progress_every=1 --output.log_level=info "$@" >"$WORK/killed-$step.log" 2>&1 &
  local launcher=$!
  trap 'kill $launcher 2>/dev/null; grep -v "bad sample" "$WORK/killed-'"$step"'.log" | tail -20; rm -rf "$WORK"' EXIT
  wait_until 60 "the planner checkpoint of step $step" test -e "$WORK/ckpt/planner-$(printf %012d "$step").h5"
  for pid in $(pgrep -f "msd-run --config $WORK/job.ini"); do
    if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=3"; then victim=$pid; fi
  done
  [ -n "$victim" ] || { echo "FAIL: world rank 3 not found (did the run end early?)"; tail "$WORK/killed-$step.log"; exit 1; }
  kill -KILL "$victim"
  trap 'rm -rf "$WORK"' EXIT
  local rc=0
  wait $launcher || rc=$?
  [ $rc -ne 0 ] && [ $rc -ne 124 ] || { echo "FAIL: the job ended with status $rc after the SIGKILL"; exit 1; }
}

# check_resumed SUMMARY LABEL: the document digests from first_step on are
# the uninterrupted run's; the placement (step_digests) is not.
check_resumed() {
  local first got
  first=$(json_field "$1" first_step)
  [ "$first" -gt 0 ] || { echo "FAIL: $2 did not resume (first_step $first)"; exit 1; }
  got=$(digests "$1" step_document_digests)
  if [ "$got" != "$(echo "$full" | tail -n +$((first + 1)))" ]; then
    echo "FAIL: $2: the documents of steps $first.. differ from the uninterrupted dp 4 run's"
    diff <(echo "$full" | tail -n +$((first + 1))) <(echo "$got") | head
    exit 1
  fi
  [ "$(digests "$1" step_digests)" != "$(digests "$WORK/full.json" step_digests | tail -n +$((first + 1)))" ] ||
    { echo "FAIL: $2: the batches are placed as at dp 4 (the test would not see a wrong placement)"; exit 1; }
  echo "resume_mesh: $2: resumed at step $first, the documents of steps $first..$((steps - 1)) as at dp 4"
}

kill_after 8 "${dp4[@]}"
status=0
run_job "$WORK/job.ini" "${fast[@]}" --checkpoint.dir="$WORK/ckpt" --resume "${dp4[@]}" --job.global_batch=32 \
  >"$WORK/refused.out" 2>&1 || status=$?
[ $status = 2 ] && grep -q "job.global_batch was '16'" "$WORK/refused.out" ||
  { echo "FAIL: a resume with another job.global_batch was not refused naming it (status $status)"; tail "$WORK/refused.out"; exit 1; }
status=0
run_job "$WORK/job.ini" "${fast[@]}" --checkpoint.dir="$WORK/ckpt" --resume --topology.dp=2 >"$WORK/refused.out" 2>&1 || status=$?
[ $status = 2 ] && grep -q "checkpoint.trace: .*trace.h5 records plans for dp 4 x pp 1 x cp 1 x tp 1" "$WORK/refused.out" ||
  { echo "FAIL: a resume on another mesh into the old trace was not refused naming checkpoint.trace"; tail "$WORK/refused.out"; exit 1; }
cp -r "$WORK/ckpt" "$WORK/ckpt-at-8"
kill_after 12 --resume "${dp2tp2[@]}"
grep -q "resuming from .*planner-000000000008.h5 at step 8" "$WORK/killed-12.log" ||
  { echo "FAIL: the dp 2 x tp 2 run did not resume at step 8"; tail "$WORK/killed-12.log"; exit 1; }
run_job "$WORK/job.ini" "${fast[@]}" --checkpoint.dir="$WORK/ckpt" --resume "${dp2[@]}" --summary-json "$WORK/dp2.json" >/dev/null 2>&1
check_resumed "$WORK/dp2.json" "dp 4 -> dp 2 x tp 2 -> dp 2"
run_job "$WORK/job.ini" "${fast[@]}" --checkpoint.dir="$WORK/ckpt-at-8" --resume "${dp2tp2[@]}" --summary-json "$WORK/dp2tp2.json" \
  >/dev/null 2>&1
check_resumed "$WORK/dp2tp2.json" "dp 4 -> dp 2 x tp 2"
