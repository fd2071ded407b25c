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
