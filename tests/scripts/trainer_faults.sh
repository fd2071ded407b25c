#!/usr/bin/env bash
# The trainer's own faults through msd::Job, with a tiny C++ trainer
# (tests/mpi/fault_trainer.cc; the Python ones are python_faults.sh):
# - an exception out of the training loop (uncaught, or caught outside the
#   Job's scope) ends the whole job within seconds, with one line naming the
#   rank, its role and the exception, and status 5 (deterministic: never
#   requeued), while its DP peer waits for it in an all-reduce;
# - finish() before the stream's end on every client is a clean end: status
#   0, the summary says the trainer stopped early, and --resume continues
#   from the next step with the uninterrupted run's batches;
# - one client finishing while the other goes on is named as a usage error
#   within seconds (status 5).
# Each case prints its time from the fault to the end of the job
# (docs/fault-tolerance.md's table).
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/faults_common.sh"
write_tiny_config "$WORK/job.ini"
sed -i 's/^steps = 8/steps = 40/' "$WORK/job.ini"
CONFIG="$WORK/job.ini"  # world: planner 0, loaders 1-2, clients 3-4 (dp 2)
TRAINER="$MSD_BUILD/tests/fault_trainer"
run_reference "$CONFIG" "$WORK/reference.json"

run_faulty throw 5 "$TRAINER" throw 4 5 --config "$CONFIG"
once throw "fatal on world rank"
none throw "terminated by SIG"  # the launcher's SIGTERM to the others after the abort is no news
expect_line throw "^\[client 1\] error: fatal on world rank 4: uncaught exception std::runtime_error: the loss is NaN at step 5; ending the whole job \(exit status 5\)"
expect_last_lines throw "the loss is NaN at step 5"
within throw 10
echo "trainer_faults: an uncaught exception on client 1 ended the job with status 5 in ${seconds}s (whole run ${whole}s)"

run_faulty unwind 5 "$TRAINER" unwind 3 5 --config "$CONFIG"
expect_line unwind "^\[client 0\] error: fatal on world rank 3: an exception unwound through msd::Job before finish\(\)"
within unwind 10
echo "trainer_faults: an exception unwinding through msd::Job ended the job with status 5 in ${seconds}s"

# Every client stops after step 9: a clean end at step 10, a planner
# checkpoint there, and a resume that continues exactly.
run_faulty early 0 "$TRAINER" early -1 9 --config "$CONFIG" --checkpoint.dir="$WORK/early" --checkpoint.planner_every=4
within early 5
summary_of early
[ "$(json_field "$WORK/early.json" steps)" = 10 ] && [ "$(json_field "$WORK/early.json" stopped_early)" = true ] ||
  { echo "FAIL: early: the summary does not say 10 steps and stopped_early"; cat "$WORK/early.json"; exit 1; }
[ "$(digests "$WORK/early.json")" = "$(digests "$WORK/reference.json" | head -10)" ] ||
  { echo "FAIL: early: the 10 steps delivered are not the uninterrupted run's"; exit 1; }
[ -f "$WORK/early/planner-000000000010.h5" ] || { echo "FAIL: early: no planner checkpoint of step 10"; ls "$WORK/early"; exit 1; }
echo "trainer_faults: every client finished after step 9: status 0 in ${seconds}s, 10 steps, stopped_early"
run_job "$CONFIG" --checkpoint.dir="$WORK/early" --checkpoint.planner_every=4 --resume \
  --summary-json "$WORK/resumed.json" >"$WORK/resumed.out" 2>&1 || { echo "FAIL: the resume failed"; tail "$WORK/resumed.out"; exit 1; }
[ "$(json_field "$WORK/resumed.json" first_step)" = 10 ] &&
  [ "$(digests "$WORK/resumed.json")" = "$(digests "$WORK/reference.json" | tail -n +11)" ] ||
  { echo "FAIL: the resume after the early finish did not continue at step 10 with the reference's batches"; exit 1; }
echo "trainer_faults: --resume continued at step 10 with the uninterrupted run's batches"

run_faulty early_one 5 "$TRAINER" early_one 3 5 --config "$CONFIG"
expect_line early_one "client world rank 3 called finish\(\) at step 6, before the stream's end \(job.steps = 40\) while client world rank 4 went on to step [0-9]+: one client finishing while the others go on is a usage error"
within early_one 10
echo "trainer_faults: one client finishing while the other went on: status 5, named in ${seconds}s"
