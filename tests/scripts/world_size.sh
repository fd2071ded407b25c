#!/usr/bin/env bash
# A world size that does not match the configuration fails on rank 0 with the
# size it needs, and the job exits non-zero without hanging.
source "$(dirname "$0")/common.sh"
write_tiny_config "$WORK/job.ini"
need=$("$MSD_RUN" --config "$WORK/job.ini" --print-world-size)
[ "$need" = 5 ] || { echo "FAIL: --print-world-size says $need, expected 5"; exit 1; }
for n in 3 7; do
  set +e
  timeout 60 $MSD_MPIEXEC -n $n "$MSD_RUN" --config "$WORK/job.ini" >"$WORK/out" 2>&1
  rc=$?
  set -e
  [ $rc -ne 0 ] && [ $rc -ne 124 ] || { echo "FAIL: exit code $rc with $n ranks"; cat "$WORK/out"; exit 1; }
  grep -q "needs 5 MPI ranks" "$WORK/out" || { echo "FAIL: no clear message with $n ranks"; cat "$WORK/out"; exit 1; }
  [ "$(grep -c 'needs 5 MPI ranks' "$WORK/out")" = 1 ] || { echo "FAIL: message printed by more than rank 0"; cat "$WORK/out"; exit 1; }
done
echo "world_size: wrong sizes rejected with the needed size"
