#!/usr/bin/env bash
# msd-plan simulate at a tiny size: the table prints, the JSON has every key
# for every method, cost balancing is no worse than the position split, and a
# bad layout is refused with exit code 2.
set -euo pipefail
: "${MSD_BUILD:?run through ctest}"
plan="$MSD_BUILD/app/msd-plan"
args=(simulate --gpus 64 --tp 4 --samples-per-gpu 8 --seq-len 8192 --steps 3 --seed 5)

"$plan" "${args[@]}" | tee /dev/stderr | grep -q "^karmarkar_karp"
json=$("$plan" "${args[@]}" --json)
python3 - "$json" <<'PY'
import json, sys
report = json.loads(sys.argv[1])
assert report["dp"] == 16 and report["steps"] == 3, report
keys = ["method", "ms_per_step_median", "ms_per_step_max", "cpu_ms_per_step_median", "cpu_ms_per_step_max", "dp_imbalance_median", "dp_imbalance_worst",
        "lower_bound_median", "lower_bound_worst", "pigeonhole_bound_median", "pigeonhole_bound_worst",
        "max_over_bound_median", "max_over_bound_worst",
        "micro_batch_imbalance_median", "micro_batch_imbalance_worst",
        "positions_imbalance_median", "positions_imbalance_worst", "step_seconds_median", "steps_on_target"]
methods = {m["method"]: m for m in report["methods"]}
assert sorted(methods) == ["greedy", "karmarkar_karp", "tokens"], methods
for m in methods.values():
    missing = [k for k in keys if k not in m]
    assert not missing, (m["method"], missing)
    assert m["dp_imbalance_worst"] >= m["lower_bound_worst"] - 1e-9 or m["dp_imbalance_median"] >= 1.0, m
    assert m["max_over_bound_median"] >= 1.0 - 1e-9, m  # a lower bound no plan beats
# In the padding-aware cost the cost methods are never heavier than the
# position split (they keep its placement when it is the lightest).
for name in ("greedy", "karmarkar_karp"):
    assert methods[name]["max_over_bound_median"] <= methods["tokens"]["max_over_bound_median"] + 1e-4, methods
print("json ok")
PY

status=0
"$plan" simulate --gpus 10 --tp 4 2>/dev/null || status=$?
[ "$status" -eq 2 ] || { echo "FAIL: --gpus 10 --tp 4 gave exit $status, expected 2"; exit 1; }
echo "ok"
