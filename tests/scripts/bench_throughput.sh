#!/usr/bin/env bash
# msd-bench throughput at a tiny size: all five modes run on the same
# documents (every run trains on the positions of the stream, source by
# source), the JSON has every key, and each measured tokens/s agrees with the
# device model's on the same steps: never faster (the emulator sleeps the
# model's time, 20x so that it dominates the tiny steps' data wait), and not
# much slower (loosely: the test machine is shared).
source "$(dirname "$0")/common.sh"
# A tiny dataset without broken records: colocated_samples drops a bad sample
# where the planner replaces it (docs/evaluation.md), which would change the
# documents of that mode.
DATA="$WORK/data"
"$MSD_BUILD/app/msd-datagen" --out "$DATA" --scale tiny --seed 7 --bad-samples 0 >/dev/null
write_tiny_config "$WORK/job.ini"
sed -i '/^tflops/d' "$WORK/job.ini"  # the emulator sleeps the device model's time instead
export MSD_MPIRUN_FLAGS="${MSD_MPIEXEC#* }"  # the test flags without the program
timeout 280 "$MSD_BUILD/app/msd-bench" throughput --config "$WORK/job.ini" --work-dir "$WORK" --json \
  -- --job.steps=6 --emulator.time_scale=20 >"$WORK/out.json"
cat "$WORK/out.json"
/usr/bin/python3 - "$WORK" <<'PY'
import json, sys
work = sys.argv[1]
report = json.load(open(work + "/out.json"))
modes = ["colocated_samples", "colocated_tokens", "msd_tokens", "msd_greedy", "msd_kk"]
assert sorted(report["modes"]) == sorted(modes), report["modes"].keys()
keys = ["tokens_per_s", "step_s", "padding_fraction", "dp_max_over_mean", "microbatch_max_over_mean",
        "bubble_fraction", "data_wait_s", "simulated_tokens_per_s", "simulation_error"]
for name, m in report["modes"].items():
    missing = [k for k in keys if k not in m]
    assert not missing, (name, missing)
    assert m["tokens_per_s"] > 0, (name, m)
    # Never faster than the model (timer slack), not more than 2x slower.
    assert -0.5 < m["simulation_error"] < 0.05, (name, m["simulation_error"])
for msd in modes[2:]:
    for base in modes[:2]:
        assert report["speedup"][f"{msd}_over_{base}"] > 0, report["speedup"]
assert "cost_model_fit" in report and report["same_positions"] is True, report
# The same documents: each source's samples and tokens are equal in every run.
realized = {m: json.load(open(f"{work}/{m}.json"))["mix_realized"] for m in modes}
for m in modes[1:]:
    assert realized[m] == realized[modes[0]], (m, realized[m], realized[modes[0]])
print("throughput json ok")
PY
# A bad configuration fails before anything runs, naming the option.
set +e
"$MSD_BUILD/app/msd-bench" throughput --config "$WORK/job.ini" -- --job.seq_len=abc >"$WORK/err" 2>&1
rc=$?
set -e
[ $rc -ne 0 ] && grep -q "job.seq_len" "$WORK/err" || { echo "FAIL: bad option not reported"; cat "$WORK/err"; exit 1; }
set +e
"$MSD_BUILD/app/msd-bench" throughput --config "$WORK/job.ini" --modes colocated,msd_fast >"$WORK/err" 2>&1
rc=$?
set -e
[ $rc -ne 0 ] && grep -q -- "--modes" "$WORK/err" || { echo "FAIL: bad --modes not reported"; cat "$WORK/err"; exit 1; }
echo "bench_throughput: ok"
