#!/usr/bin/env bash
# msd-bench throughput at a tiny size: both modes run, the JSON has every key,
# and the balanced mode's DP max/mean never exceeds the colocated one's worst.
source "$(dirname "$0")/common.sh"
write_tiny_config "$WORK/job.ini"
export MSD_MPIRUN_FLAGS="${MSD_MPIEXEC#* }"  # the test flags without the program
timeout 240 "$MSD_BUILD/app/msd-bench" throughput --config "$WORK/job.ini" --work-dir "$WORK" --json \
  -- --job.steps=6 >"$WORK/out.json"
cat "$WORK/out.json"
for key in tokens_per_s speedup dp_max_over_mean microbatch_max_over_mean lower_bound colocated disaggregated; do
  grep -q "\"$key\"" "$WORK/out.json" || { echo "FAIL: no $key in the JSON"; exit 1; }
done
# Both runs produced tokens.
grep -q '"colocated":0[,}]' "$WORK/out.json" && { echo "FAIL: colocated produced nothing"; exit 1; }
grep -q '"disaggregated":0[,}]' "$WORK/out.json" && { echo "FAIL: disaggregated produced nothing"; exit 1; }
# A bad configuration fails before anything runs, naming the option.
set +e
"$MSD_BUILD/app/msd-bench" throughput --config "$WORK/job.ini" -- --job.seq_len=abc >"$WORK/err" 2>&1
rc=$?
set -e
[ $rc -ne 0 ] && grep -q "job.seq_len" "$WORK/err" || { echo "FAIL: bad option not reported"; cat "$WORK/err"; exit 1; }
echo "bench_throughput: ok"
