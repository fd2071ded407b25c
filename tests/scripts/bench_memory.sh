#!/usr/bin/env bash
# msd-bench memory at a tiny size (2 sources, 4 client ranks): both modes run,
# the JSON has every key, the Megatron-style figure counts the loading ranks, msd reads exactly what the batches use and the
# colocated baseline more.
source "$(dirname "$0")/common.sh"
export MSD_MPIRUN_FLAGS="${MSD_MPIEXEC#* }"  # the test flags without the program
timeout 240 "$MSD_BUILD/app/msd-bench" memory --sources 2 --ranks 4 --documents 400 --steps 2 \
  --work-dir "$WORK/bench" --json >"$WORK/out.json"
cat "$WORK/out.json"
for key in rows sources ranks colocated_bytes disaggregated_bytes ratio megatron_bytes ratio_vs_megatron fetch_redundancy; do
  grep -q "\"$key\"" "$WORK/out.json" || { echo "FAIL: no $key in the JSON"; exit 1; }
done
grep -q '"disaggregated_bytes":0[,}]' "$WORK/out.json" && { echo "FAIL: no disaggregated loader memory"; exit 1; }
# 4 ranks are dp 1 x cp 2 x tp 2: Megatron loads on TP rank 0 of each CP rank,
# half the colocated ranks.
/usr/bin/python3 - "$WORK/out.json" <<'PY'
import json, sys
row = json.load(open(sys.argv[1]))["rows"][0]
expected = row["colocated_bytes"] // 4 * 2
assert row["megatron_bytes"] == expected, (row["megatron_bytes"], expected)
ratio = row["megatron_bytes"] / row["disaggregated_bytes"]
assert abs(row["ratio_vs_megatron"] - ratio) < 1e-9 * ratio, (row["ratio_vs_megatron"], ratio)
PY
grep -q '"fetch_redundancy":{"colocated":[0-9.e+]*,"disaggregated":1[,}]' "$WORK/out.json" ||
  { echo "FAIL: msd's fetch redundancy is not 1"; exit 1; }
set +e
"$MSD_BUILD/app/msd-bench" memory --ranks 6 >"$WORK/err" 2>&1
rc=$?
set -e
[ $rc -ne 0 ] && grep -q -- "--ranks" "$WORK/err" || { echo "FAIL: bad --ranks not reported"; cat "$WORK/err"; exit 1; }
echo "bench_memory: ok"
