#!/usr/bin/env bash
# Exact resume: a job whose loader (then a client) is killed with SIGKILL
# mid-run restarts from its checkpoint and delivers, from the resumed step on,
# exactly the batches of an uninterrupted run — also with another number of
# loaders. The resumed run starts no later than the step the killed run had
# delivered.
source "$(dirname "$0")/common.sh"
steps=24
# Slow enough steps (emulated compute) that the kill lands mid-run; the runs
# that are not killed need no emulated compute (it does not change the
# batches), so they run without it.
write_tiny_config "$WORK/job.ini"
sed -i -e "s/^steps = .*/steps = $steps/" -e "s/^time_scale = .*/time_scale = 30/" "$WORK/job.ini"
fast=(--emulator.time_scale=0)

run_job "$WORK/job.ini" "${fast[@]}" --summary-json "$WORK/full.json" --checkpoint.dir="$WORK/full" >/dev/null
full_digests=$(grep -o '"step_digests":\[[^]]*\]' "$WORK/full.json" | tr -d '[]"' | cut -d: -f2 | tr ',' '\n')
[ "$(echo "$full_digests" | wc -l)" = $steps ] || { echo "FAIL: uninterrupted run delivered the wrong number of steps"; exit 1; }

# kill_rank RANK DIR [msd-run options]: runs the job with checkpoints in DIR
# and SIGKILLs world rank RANK once the planner (and, with loader checkpoints,
# the loaders) have checkpointed step 8.
kill_rank() {
  local rank=$1 dir=$2
  shift 2
  local n wait_for="$dir/planner-*08.h5"
  n=$("$MSD_RUN" --config "$WORK/job.ini" --print-world-size)
  [[ " $* " == *loader_every* ]] && wait_for="$wait_for $dir/loaders-000000000008-*.h5"
  timeout 120 $MSD_MPIEXEC -n "$n" "$MSD_RUN" --config "$WORK/job.ini" --checkpoint.dir="$dir" \
    --checkpoint.planner_every=4 --output.progress_every=1 --output.log_level=info "$@" >"$dir.log" 2>&1 &
  local launcher=$!
  # shellcheck disable=SC2086
  wait_until 30 "the checkpoints of step 8 ($wait_for)" eval "ls $wait_for >/dev/null 2>&1"
  local victim=""
  for pid in $(pgrep -f "msd-run --config $WORK/job.ini"); do
    if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$rank"; then victim=$pid; fi
  done
  [ -n "$victim" ] || { echo "FAIL: rank $rank not found (did the run end too early?)"; cat "$dir.log"; exit 1; }
  kill -KILL "$victim"
  set +e
  wait $launcher
  local rc=$?
  set -e
  [ $rc -ne 0 ] || { echo "FAIL: the job survived the SIGKILL of rank $rank"; exit 1; }
  [ $rc -ne 124 ] || { echo "FAIL: the job hung after the SIGKILL of rank $rank (timeout's 124)"; exit 1; }
  delivered=$( (grep -o 'step [0-9]*/' "$dir.log" || true) | tail -1 | tr -dc 0-9)
  echo "killed rank $rank after step ${delivered:-0} was delivered"
}

check_resumed() {
  local summary=$1 label=$2
  local first
  first=$(json_field "$summary" first_step)
  [ -n "$first" ] && [ "$first" -gt 0 ] || { echo "FAIL: $label did not resume (first_step '$first')"; exit 1; }
  [ "$first" -le "${delivered:-0}" ] || { echo "FAIL: $label resumed at $first, after the $delivered delivered steps"; exit 1; }
  local got expected
  got=$(grep -o '"step_digests":\[[^]]*\]' "$summary" | tr -d '[]"' | cut -d: -f2 | tr ',' '\n')
  expected=$(echo "$full_digests" | tail -n +$((first + 1)))
  if [ "$got" != "$expected" ]; then
    echo "FAIL: $label: step digests from step $first differ from the uninterrupted run"
    diff <(echo "$expected") <(echo "$got") | head
    exit 1
  fi
  echo "$label: resumed at step $first, steps $first..$((steps - 1)) identical to the uninterrupted run"
}

# A loader killed; resumed with the same and with another number of loaders.
kill_rank 1 "$WORK/a"
cp -r "$WORK/a" "$WORK/a2"
run_job "$WORK/job.ini" "${fast[@]}" --checkpoint.dir="$WORK/a" --resume --summary-json "$WORK/a.json" >/dev/null
check_resumed "$WORK/a.json" "loader killed, 2 loaders"
run_job "$WORK/job.ini" "${fast[@]}" --checkpoint.dir="$WORK/a2" --resume --loaders 3 --summary-json "$WORK/a2.json" >/dev/null
check_resumed "$WORK/a2.json" "loader killed, resumed with 3 loaders"

# A client killed (world rank 1 + 2 loaders = 3 is client 0), with loader
# checkpoints that keep the images' transformed samples: the resumed loaders
# serve those from the snapshot, and the stream is still the same.
snapshot=(--checkpoint.loader_every=4 --checkpoint.snapshot_sources=images)
kill_rank 3 "$WORK/b" "${snapshot[@]}"
run_job "$WORK/job.ini" "${fast[@]}" --checkpoint.dir="$WORK/b" --resume "${snapshot[@]}" --output.log_level=info \
  --summary-json "$WORK/b.json" >"$WORK/b-resume.log" 2>&1
check_resumed "$WORK/b.json" "client killed"
grep -q "samples from the loader checkpoint's snapshot" "$WORK/b-resume.log" ||
  { echo "FAIL: no sample was served from the loader checkpoint"; grep -i "resume\|snapshot" "$WORK/b-resume.log"; exit 1; }

# Resuming with a configuration that changes the stream is refused by name.
set +e
run_job "$WORK/job.ini" "${fast[@]}" --checkpoint.dir="$WORK/b" --resume --seed 77 >"$WORK/refused" 2>&1
rc=$?
set -e
[ $rc = 2 ] && grep -q "seed" "$WORK/refused" ||
  { echo "FAIL: a resume with another seed was not refused with status 2 (got $rc)"; cat "$WORK/refused"; exit 1; }
echo "resume: exact after SIGKILL of a loader and of a client"
