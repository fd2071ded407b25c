#!/usr/bin/env bash
# SIGTERM and SIGINT (docs/errors.md): a rank that gets one ends with 128 +
# the signal (transient: requeued) and the node logs it once, "world rank R
# terminated by SIGTERM at step N" (when a launcher passes the signal to
# every rank, or kills the others after one rank ended, the first logs it);
# the checkpoints stay consistent, so --resume continues with the
# uninterrupted run's batches.
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/faults_common.sh"
write_slow_job
# Only the signalled runs need slow steps (the signal lands mid-run); the
# reference and the resumed run go without emulated compute (same batches).
fast=(--emulator.time_scale=0)
run_reference "$WORK/job.ini" "$WORK/reference.json" "${fast[@]}"

# signal_job NAME SIGNAL TARGET: starts the job on $WORK/NAME, sends SIGNAL to
# TARGET (mpirun, or a world rank) after the planner checkpoint of step 8,
# waits for the end; sets rc and seconds (signal to end).
signal_job() {
  local name=$1 signal=$2 target=$3 job sent
  timeout 120 $MSD_MPIEXEC -n "$n" "$MSD_RUN" --config "$WORK/job.ini" --checkpoint.dir="$WORK/$name" "${ckpt[@]}" \
    --output.progress_every=1 >"$WORK/$name.out" 2>&1 &
  job=$!
  wait_until 60 "$name: the planner checkpoint of step 8" test -e "$WORK/$name/planner-000000000008.h5"
  if [ "$target" = mpirun ]; then
    kill "-$signal" "$(pgrep -P $job)"  # mpirun, the child of timeout (which would signal the ranks itself)
  else
    wait_until 10 "$name: world rank $target" found_rank_pid "checkpoint.dir=$WORK/$name " "$target"
    kill "-$signal" "$pid"
  fi
  sent=$(now_s)
  rc=0
  wait $job || rc=$?
  seconds=$(printf "%.1f" "$(echo "$(now_s) - $sent" | bc)")
  [ $rc != 124 ] || { echo "FAIL: $name: the job hung after $signal"; tail -20 "$WORK/$name.out"; exit 1; }
}

# SIGTERM to mpirun (as scancel or a preemption does): it forwards it to
# every rank; each names itself once.
signal_job term_all TERM mpirun
[ $rc != 0 ] || { echo "FAIL: term_all: status 0 after SIGTERM"; exit 1; }
# One line for the node, from the planner or a client (a loader knows no
# step and lets them go first), not one per rank.
once term_all "terminated by SIGTERM"
once term_all "^\[(planner|client [0-9]+)\] error: world rank [0-9]+ terminated by SIGTERM at step [0-9]+; ending this process \(exit status 143\)$"
within term_all 10
echo "signals: SIGTERM to mpirun: one line for the $n ranks, status $rc after ${seconds}s: $(grep -m1 'terminated by' "$WORK/term_all.out")"
run_job "$WORK/job.ini" "${fast[@]}" --checkpoint.dir="$WORK/term_all" "${ckpt[@]}" --resume --summary-json "$WORK/resumed.json" \
  >"$WORK/resumed.out" 2>&1 || { echo "FAIL: the resume after SIGTERM failed"; tail "$WORK/resumed.out"; exit 1; }
first=$(json_field "$WORK/resumed.json" first_step)
[ "$first" -ge 8 ] && [ "$(digests "$WORK/resumed.json")" = "$(digests "$WORK/reference.json" | tail -n +$((first + 1)))" ] ||
  { echo "FAIL: the resume after SIGTERM did not continue with the reference's batches"; exit 1; }
echo "signals: --resume after SIGTERM continued at step $first with the uninterrupted run's batches"

# SIGTERM, then SIGINT, to one client: it names itself; mpirun ends the rest
# with its status.
signal_job term_client TERM 4
[ $rc = 143 ] || { echo "FAIL: term_client: status $rc, expected 143"; tail -20 "$WORK/term_client.out"; exit 1; }
once term_client "terminated by SIGTERM"
once term_client "^\[client 1\] error: world rank 4 terminated by SIGTERM at step [0-9]+; ending this process \(exit status 143\)$"
within term_client 10
echo "signals: SIGTERM to client 1: status 143 after ${seconds}s"
signal_job int_client INT 3
[ $rc = 130 ] || { echo "FAIL: int_client: status $rc, expected 130"; tail -20 "$WORK/int_client.out"; exit 1; }
once int_client "terminated by SIG"
once int_client "^\[client 0\] error: world rank 3 terminated by SIGINT at step [0-9]+; ending this process \(exit status 130\)$"
within int_client 10
echo "signals: SIGINT to client 0: status 130 after ${seconds}s"
