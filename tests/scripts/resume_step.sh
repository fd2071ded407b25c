#!/usr/bin/env bash
# Resume at the trainer's step and over the same data only.
#  - --resume-step N starts from the newest planner checkpoint at or before N
#    (not the newest one) and fast-forwards to exactly N: the first step
#    delivered is N and the step digests from N on equal an uninterrupted
#    run's, for N at a checkpoint and N between two; the config field
#    checkpoint.resume_step does the same.
#  - N beyond the run, or with no checkpoint at or before it, is refused.
#  - A data file changed under the checkpoints: --resume is refused with a
#    message naming the file; --resume-accept-changed-data resumes with a
#    warning.
source "$(dirname "$0")/common.sh"
steps=24
cp -r "$DATA" "$WORK/data"  # a private copy: this test changes a file
DATA="$WORK/data"
write_tiny_config "$WORK/job.ini"
sed -i -e "s/^steps = .*/steps = $steps/" "$WORK/job.ini"
ckpt=(--checkpoint.planner_every=4 --checkpoint.keep=100)

digests() { grep -o '"step_digests":\[[^]]*\]' "$1" | tr -d '[]"' | cut -d: -f2 | tr ',' '\n'; }

run_job "$WORK/job.ini" "${ckpt[@]}" --checkpoint.dir="$WORK/full" --summary-json "$WORK/full.json" >/dev/null
full=$(digests "$WORK/full.json")
[ "$(echo "$full" | wc -l)" = $steps ] || { echo "FAIL: the uninterrupted run delivered the wrong number of steps"; exit 1; }
ls "$WORK/full"/planner-*.h5 >/dev/null || { echo "FAIL: the uninterrupted run wrote no planner checkpoint"; exit 1; }

# resumed_at LABEL N SUMMARY: the resumed run delivered steps N.. as the full run did.
resumed_at() {
  local label=$1 n=$2 summary=$3 first got expected
  first=$(json_field "$summary" first_step)
  [ "$first" = "$n" ] || { echo "FAIL: $label: first step delivered is '$first', expected $n"; exit 1; }
  got=$(digests "$summary")
  expected=$(echo "$full" | tail -n +$((n + 1)))
  if [ "$got" != "$expected" ]; then
    echo "FAIL: $label: step digests from step $n differ from the uninterrupted run"
    diff <(echo "$expected") <(echo "$got") | head
    exit 1
  fi
  echo "$label: steps $n..$((steps - 1)) identical to the uninterrupted run"
}

for n in 8 10 13; do
  cp -r "$WORK/full" "$WORK/r$n"
  if [ $n = 13 ]; then how=(--checkpoint.resume_step=$n); else how=(--resume-step $n); fi
  run_job "$WORK/job.ini" "${ckpt[@]}" --checkpoint.dir="$WORK/r$n" "${how[@]}" --output.log_level=info \
    --summary-json "$WORK/r$n.json" >"$WORK/r$n.log" 2>&1 || { cat "$WORK/r$n.log"; exit 1; }
  # The newest checkpoint at or before n that the full run made durable (one
  # still being synced when the next is due is superseded, docs/checkpoint.md).
  start=$(ls "$WORK/full" | sed -n 's/^planner-0*\([0-9][0-9]*\)\.h5$/\1/p' | awk -v n=$n '$1 <= n' | sort -n | tail -1)
  [ -n "$start" ] || { echo "FAIL: no planner checkpoint at or before step $n"; ls "$WORK/full"; exit 1; }
  grep -q "resuming from .*planner-0*$start.h5 at step $start" "$WORK/r$n.log" ||
    { echo "FAIL: resume step $n did not start from the checkpoint of step $start"; grep -i resum "$WORK/r$n.log"; exit 1; }
  resumed_at "${how[*]}" $n "$WORK/r$n.json"
done
# The resumed run's trace (steps fast-forwarded included) still verifies.
"$MSD_BUILD/app/msd-replay" verify "$WORK/r10/trace.h5" | grep -q "$steps steps from step 0 equal" ||
  { echo "FAIL: the trace of the run resumed at step 10 does not verify"; exit 1; }

# refused CONFIG_ARGS... EXPECTED: the resume fails, naming EXPECTED.
refused() {
  local expected=${*: -1} rc
  set +e
  run_job "$WORK/job.ini" "${ckpt[@]}" "${@:1:$#-1}" >"$WORK/refused" 2>&1
  rc=$?
  set -e
  [ $rc = 2 ] && grep -q -- "$expected" "$WORK/refused" ||
    { echo "FAIL: expected a refusal (status 2) naming '$expected' (exit $rc)"; cat "$WORK/refused"; exit 1; }
  echo "refused: $(grep -m1 -- "$expected" "$WORK/refused")"
}
refused --checkpoint.dir="$WORK/full" --resume-step $steps "checkpoint.resume_step: $steps is beyond the run"
refused --checkpoint.dir="$WORK/full" --resume-step 3 "no readable planner checkpoint at or before step 3"

# A data file changed under the checkpoints (same line count: the sources
# keep their sizes).
changed=$(ls "$DATA"/books/*.jsonl | tail -1)
sed -i '$ s/e/a/' "$changed"
refused --checkpoint.dir="$WORK/r8" --resume "the data changed since the checkpoint"
grep -q "source books: file $changed has its recorded size" "$WORK/refused" ||
  { echo "FAIL: the refusal does not name the changed file $changed"; cat "$WORK/refused"; exit 1; }
run_job "$WORK/job.ini" "${ckpt[@]}" --checkpoint.dir="$WORK/r8" --resume --resume-accept-changed-data \
  --output.log_level=warn --summary-json "$WORK/accepted.json" >"$WORK/accepted.log" 2>&1 ||
  { echo "FAIL: --resume-accept-changed-data did not resume"; cat "$WORK/accepted.log"; exit 1; }
grep -q "resuming anyway" "$WORK/accepted.log" || { echo "FAIL: no warning on accepted data change"; exit 1; }
[ "$(json_field "$WORK/accepted.json" first_step)" -gt 0 ] || { echo "FAIL: the accepted run did not resume"; exit 1; }
# verify sees the change too (exit 5 when nothing else differs).
set +e
out=$("$MSD_BUILD/app/msd-replay" verify "$WORK/full/trace.h5")
rc=$?
set -e
[ $rc = 5 ] && echo "$out" | grep -q "$changed" ||
  { echo "FAIL: verify over changed data exited $rc: $out"; exit 1; }
echo "resume_step: fast-forward exact at and between checkpoints; changed data refused by name, accepted on request"
