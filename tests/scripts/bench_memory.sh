#!/usr/bin/env bash
# msd-bench memory at a tiny size (2 sources, 4 client ranks): both modes run,
# the JSON has every key, msd reads exactly what the batches use and the
# colocated baseline more.
source "$(dirname "$0")/common.sh"
export MSD_MPIRUN_FLAGS="${MSD_MPIEXEC#* }"  # the test flags without the program
timeout 240 "$MSD_BUILD/app/msd-bench" memory --sources 2 --ranks 4 --documents 400 --steps 2 \
  --work-dir "$WORK/bench" --json >"$WORK/out.json"
cat "$WORK/out.json"
for key in rows sources ranks colocated_bytes disaggregated_bytes ratio fetch_redundancy; do
  grep -q "\"$key\"" "$WORK/out.json" || { echo "FAIL: no $key in the JSON"; exit 1; }
done
grep -q '"disaggregated_bytes":0[,}]' "$WORK/out.json" && { echo "FAIL: no disaggregated loader memory"; exit 1; }
grep -q '"fetch_redundancy":{"colocated":[0-9.e+]*,"disaggregated":1[,}]' "$WORK/out.json" ||
  { echo "FAIL: msd's fetch redundancy is not 1"; exit 1; }
set +e
"$MSD_BUILD/app/msd-bench" memory --ranks 6 >"$WORK/err" 2>&1
rc=$?
set -e
[ $rc -ne 0 ] && grep -q -- "--ranks" "$WORK/err" || { echo "FAIL: bad --ranks not reported"; cat "$WORK/err"; exit 1; }
echo "bench_memory: ok"
