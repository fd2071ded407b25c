#!/usr/bin/env bash
# A training script's own faults through msd.Job (tests/python/fault_job.py),
# each under plain python3 and under python3 -m mpi4py:
# - an exception the script does not catch (with or without `with
#   msd.Job(...)`) ends the whole job within seconds with its traceback and
#   one line naming the rank, its role and the exception (status 5), never
#   hanging in the interpreter's exit;
# - sys.exit(3) inside `with` keeps the script's status;
# - leaving the loop early on every client is a clean end (status 0, the
#   summary says so); on one client only, a usage error named within seconds;
# - a script that never calls finish() still ends cleanly and writes its
#   summary (msd finishes the job at exit).
# Each case prints its time from the fault to the end of the job
# (docs/fault-tolerance.md's table).
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/faults_common.sh"
write_tiny_config "$WORK/job.ini"
sed -i 's/^steps = 8/steps = 40/' "$WORK/job.ini"
CONFIG="$WORK/job.ini"  # world: planner 0, loaders 1-2, clients 3-4 (dp 2)
run_reference "$CONFIG" "$WORK/reference.json"
export PYTHONPATH="$MSD_BUILD/python" OMP_NUM_THREADS=1
JOB="$MSD_SOURCE/tests/python/fault_job.py"

for how in plain mpi4py; do
  python=(/usr/bin/python3)
  [ $how = plain ] || python+=(-m mpi4py)

  run_faulty "raise-$how" 5 "${python[@]}" "$JOB" raise 4 5 "$CONFIG"
  once "raise-$how" "fatal on world rank"
  none "raise-$how" "terminated by SIG"
  expect_line "raise-$how" "^\[client 1\] error: fatal on world rank 4: the trainer raised ValueError at step 5: the loss is NaN at step 5; ending the whole job \(exit status 5\)"
  expect_last_lines "raise-$how" "ValueError: the loss is NaN at step 5"
  within "raise-$how" 10
  echo "python_faults ($how): an uncaught ValueError on client 1 ended the job with status 5 in ${seconds}s (whole run ${whole}s)"

  run_faulty "raise_with-$how" 5 "${python[@]}" "$JOB" raise_with 3 5 "$CONFIG"
  expect_line "raise_with-$how" "^\[client 0\] error: fatal on world rank 3: the trainer raised ValueError at step 5: the loss is NaN"
  expect_last_lines "raise_with-$how" "ValueError: the loss is NaN at step 5"
  within "raise_with-$how" 10
  echo "python_faults ($how): a ValueError leaving \`with msd.Job\` ended the job with status 5 in ${seconds}s"

  run_faulty "exit_with-$how" 3 "${python[@]}" "$JOB" exit_with 3 5 "$CONFIG"
  expect_line "exit_with-$how" "fatal on world rank 3: the script exited with status 3 inside \`with msd.Job\(...\)\`"
  within "exit_with-$how" 10
  echo "python_faults ($how): sys.exit(3) inside \`with\` ended the job with status 3 in ${seconds}s"

  run_faulty "early-$how" 0 "${python[@]}" "$JOB" early -1 9 "$CONFIG"
  within "early-$how" 10  # the aim is 5 s; most of it is the interpreters' exit, slower on a busy machine
  summary_of "early-$how"
  [ "$(json_field "$WORK/early-$how.json" steps)" = 10 ] && [ "$(json_field "$WORK/early-$how.json" stopped_early)" = true ] &&
    [ "$(json_field "$WORK/early-$how.json" batch_digest)" != "$(json_field "$WORK/reference.json" batch_digest)" ] ||
    { echo "FAIL: early-$how: the summary does not say 10 steps and stopped_early"; cat "$WORK/early-$how.json"; exit 1; }
  echo "python_faults ($how): every client left the loop after step 9: status 0 in ${seconds}s, stopped_early"

  run_faulty "early_one-$how" 5 "${python[@]}" "$JOB" early_one 3 5 "$CONFIG"
  expect_line "early_one-$how" "client world rank 3 called finish\(\) at step 6, .* while client world rank 4 went on to step [0-9]+"
  within "early_one-$how" 10
  echo "python_faults ($how): one client left the loop while the other went on: status 5, named in ${seconds}s"

  n=$("$MSD_RUN" --config "$CONFIG" --print-world-size)
  rc=0
  # shellcheck disable=SC2086
  timeout 120 $MSD_MPIEXEC -n "$n" "${python[@]}" "$JOB" no_finish -1 0 "$CONFIG" --summary-json "$WORK/no_finish-$how.json" \
    >"$WORK/no_finish-$how.out" 2>&1 || rc=$?
  [ $rc = 0 ] && [ "$(json_field "$WORK/no_finish-$how.json" batch_digest)" = "$(json_field "$WORK/reference.json" batch_digest)" ] ||
    { echo "FAIL: no_finish-$how: status $rc, or no summary with the reference's digest"; tail -20 "$WORK/no_finish-$how.out"; exit 1; }
  grep -q "finish() was not called before the interpreter exits" "$WORK/no_finish-$how.out" ||
    { echo "FAIL: no_finish-$how: no line says finish() was not called"; exit 1; }
  echo "python_faults ($how): a script without finish() ended with status 0 and its summary written"
done
