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

# msd's placement options: cut-aware cuts within Megatron's piece count,
# variable micro-batches, the outlier hold; refused under CP.
new=(--cuts balance --micro-batch-count variable --hold-above 0.5 --hold-steps 4)
json=$("$plan" simulate --dp 8 --tp 1 --samples-per-gpu 8 --seq-len 8192 --steps 12 --seed 5 --lengths pile --image-share 0 "${new[@]}" --json)
python3 - "$json" <<'PY'
import json, sys
report = json.loads(sys.argv[1])
assert report["cuts"] == "balance" and report["variable_micro_batches"], report
for m in report["methods"]:
    assert 0 < m["pieces_per_step"] <= m["megatron_pieces_per_step"], m
    assert m["max_cost_sum"] > 0 and m["max_micro_batches"] >= 1, m
hold = report["hold"]
assert hold["held"] > 0 and 0 < hold["mean_delay"] <= hold["max_delay"] <= 4, hold
print("placement options ok")
PY
# Under CP the variable-length rows are split per piece (THD), placed as for cp 1.
"$plan" "${args[@]}" --cp 2 --cuts balance >/dev/null || { echo "FAIL: --cuts balance with --cp 2"; exit 1; }

# msd-plan place: every placement places every document's positions once;
# with _vmb a rank's micro-batch count is its own.
placed=$("$plan" place --dp 8 --seq-len 2048 --samples-per-gpu 4 --steps 10 --micro-batches 1 \
  --modes megatron,msd_greedy_varlen,msd_greedy_cut_vmb,msd_greedy_cut_vmb_hold,msd_greedy_vmb_hold)
python3 - "$placed" <<'PY'
import json, sys
report = json.loads(sys.argv[1])
lengths = report["documents"]
for name, p in report["placements"].items():
    covered = {}
    counts = set()
    for step in p["steps"]:
        for rank in step:
            counts.add(len(rank))
            for mb in rank:
                for sequence in mb:
                    for doc, begin, length in sequence:
                        covered.setdefault(doc, []).append((begin, length))
    assert sorted(covered) == list(range(len(lengths))), name
    for doc, pieces in covered.items():
        pieces.sort()
        at = 0
        for begin, length in pieces:
            assert begin == at, (name, doc, pieces)
            at += length
        assert at == lengths[doc], (name, doc, pieces, lengths[doc])
    if "_vmb" in name:
        assert p["micro_batch_count"] == "variable", p["micro_batch_count"]
    if "_cut" in name:
        assert p["pieces"] <= report["placements"]["megatron"]["pieces"], name
    if "_hold" in name:
        assert p["hold"]["held"] > 0 and p["hold"]["max_delay"] <= 8, p["hold"]
print("place ok")
PY
status=0
"$plan" place --modes megatron_cut >/dev/null 2>&1 || status=$?
[ "$status" -eq 2 ] || { echo "FAIL: a baseline with _cut gave exit $status, expected 2"; exit 1; }

status=0
"$plan" simulate --gpus 10 --tp 4 2>/dev/null || status=$?
[ "$status" -eq 2 ] || { echo "FAIL: --gpus 10 --tp 4 gave exit $status, expected 2"; exit 1; }
echo "ok"
