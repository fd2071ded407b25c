#!/usr/bin/env bash
# slurm/msd-run.sbatch under a real Slurm controller (srun --mpi=pmix): the
# job runs and delivers the same batch stream as under mpirun. Skipped (exit
# MSD_SKIP_CODE, which ctest reports as skipped), with a line saying so, when
# no Slurm controller answers (tools/slurm-local.sh starts one on this machine).
source "$(dirname "$0")/common.sh"
skip() {
  echo "slurm: SKIPPED: $* (tools/slurm-local.sh installs and starts a single-node Slurm)"
  exit "${MSD_SKIP_CODE:-77}"
}
command -v sbatch >/dev/null || skip "Slurm's client commands are not installed"
states=$(timeout 30 sinfo -h -o '%N %T %E' 2>&1) || skip "no Slurm controller answers: $states"
grep -qE ' (idle|mix|alloc)' <<<"$states" || skip "no node takes jobs: $states"
write_tiny_config "$WORK/job.ini"
run_job "$WORK/job.ini" --summary-json "$WORK/mpirun.json" >/dev/null
n=$("$MSD_RUN" --config "$WORK/job.ini" --print-world-size)
MSD_BUILD="$MSD_BUILD" MSD_CONFIG="$WORK/job.ini" timeout 240 sbatch --wait --ntasks="$n" \
  --output="$WORK/slurm-%j.out" "$MSD_SOURCE/slurm/msd-run.sbatch" --summary-json "$WORK/slurm.json" >/dev/null ||
  { echo "FAIL: the Slurm job failed"; cat "$WORK"/slurm-*.out; exit 1; }
[ "$(json_field "$WORK/slurm.json" batch_digest)" = "$(json_field "$WORK/mpirun.json" batch_digest)" ] ||
  { echo "FAIL: the Slurm job delivered another batch stream"; exit 1; }
# A wrong task count is refused by the script before srun starts.
set +e
MSD_BUILD="$MSD_BUILD" MSD_CONFIG="$WORK/job.ini" timeout 120 sbatch --wait --ntasks=$((n + 1)) \
  --output="$WORK/wrong-%j.out" "$MSD_SOURCE/slurm/msd-run.sbatch" >/dev/null 2>&1
rc=$?
set -e
[ $rc -ne 0 ] && grep -q "needs $n tasks" "$WORK"/wrong-*.out || { echo "FAIL: a wrong task count was not refused"; exit 1; }
echo "slurm: sbatch + srun --mpi=pmix delivered the mpirun batch stream ($(json_field "$WORK/slurm.json" batch_digest))"

# sbatch_until_gone NAME CONFIG [msd-run args...]: submits the script (output
# appended over requeues to $WORK/NAME.out) and waits, bounded, until the job
# has left the queue for good, requeues included. A requeued job waits about
# 2 minutes for its begin time (Slurm's own delay); the test starts it now.
# While Slurm requeues a job it may be missing from squeue for a moment, so
# an empty answer counts as gone only when the script's last word was not
# "requeueing".
sbatch_until_gone() {
  local name=$1 config=$2 id i state
  shift 2
  id=$(MSD_BUILD="$MSD_BUILD" MSD_CONFIG="$config" sbatch --parsable --ntasks="$("$MSD_RUN" --config "$config" --print-world-size)" \
    --open-mode=append --output="$WORK/$name.out" "$MSD_SOURCE/slurm/msd-run.sbatch" "$@")
  for i in $(seq 240); do
    state=$(squeue -h -j "$id" -o '%T %r' 2>/dev/null) || state=""
    [ -n "$state" ] || grep 'msd-run.sbatch:' "$WORK/$name.out" 2>/dev/null | tail -1 | grep -q requeueing || return 0
    [[ $state != *BeginTime* ]] || scontrol update JobId="$id" StartTime=now >/dev/null 2>&1 || true
    sleep 1
  done
  scancel "$id"
  echo "FAIL: $name: job $id still queued after 240 s"; cat "$WORK/$name.out"; exit 1
}
# A deterministic failure (a source with no good sample: exit status 4) is
# not requeued.
write_bad_source_config "$WORK/bad.ini"
sbatch_until_gone bad "$WORK/bad.ini"
grep -q "exit status 4 (the data: deterministic); not requeued" "$WORK/bad.out" && ! grep -q requeueing "$WORK/bad.out" ||
  { cat "$WORK/bad.out"; echo "FAIL: a data failure was requeued, or not reported"; exit 1; }
# A transient one (an injected crash: exit status 3) is requeued, at most
# MSD_MAX_REQUEUES times across restarts.
MSD_MAX_REQUEUES=1 sbatch_until_gone crash "$WORK/job.ini" --fault.kind=crash --fault.rank=0 --fault.step=2
runs=$(grep -c "fatal on world rank 0" "$WORK/crash.out" || true)
[ "$runs" = 2 ] && grep -q "requeue 1 of at most 1" "$WORK/crash.out" && grep -q "after 1 requeue(s); not requeued again" "$WORK/crash.out" ||
  { cat "$WORK/crash.out"; echo "FAIL: a transient failure was not requeued exactly once (ran $runs times)"; exit 1; }
echo "slurm: a data failure (status 4) was not requeued; a crash (status 3) was requeued once under MSD_MAX_REQUEUES=1, then not again"
