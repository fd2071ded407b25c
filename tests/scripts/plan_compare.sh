#!/usr/bin/env bash
# msd-plan simulate --compare at a tiny size: every training mode is
# evaluated on the device model, the JSON has every key, every mode places
# the same positions, Megatron's baselines give every rank the same count,
# msd's cost balancing beats the sample split where the steps are
# heavy-tailed, padding is where it must be, megatron_dynamic_cp runs where
# cp > 1, and an unknown preset is refused with exit code 2. msd-plan place:
# every placement places the same tokens, with its rows and attention.
source "$(dirname "$0")/common.sh"
plan="$MSD_BUILD/app/msd-plan"
args=(simulate --compare --gpus 64 --tp 4 --pp 2 --samples-per-gpu 16 --seq-len 8192 --steps 3 --seed 5)

"$plan" "${args[@]}" | tee /dev/stderr | grep -q "^msd_kk"
json=$("$plan" "${args[@]}" --json)
/usr/bin/python3 - "$json" <<'PY'
import json, sys
report = json.loads(sys.argv[1])
assert report["dp"] == 8 and report["pp"] == 2, report
modes = report["modes"]
assert sorted(modes) == sorted(["colocated_samples", "colocated_tokens", "megatron", "megatron_docmask",
                                "megatron_dp_balanced", "msd_tokens", "msd_greedy", "msd_kk"]), modes
keys = ["tokens_per_s", "step_s", "padding_fraction", "dp_max_over_mean", "microbatch_max_over_mean",
        "bubble_fraction", "cost_model_fit", "rows", "attention", "positions", "steps", "sequences_per_rank"]
for name, m in modes.items():
    missing = [k for k in keys if k not in m]
    assert not missing, (name, missing)
    assert m["tokens_per_s"] > 0 and m["dp_max_over_mean"] >= 1 - 1e-9, (name, m)
    assert 0 <= m["padding_fraction"] < 1 and 0 <= m["bubble_fraction"] < 1, (name, m)
    assert m["positions"] == report["positions"] > 0, (name, m["positions"], report["positions"])
assert report["dropped_positions"] >= 0 and report["megatron_batch"]["micro_batch_size"] >= 1, report
# Megatron's sampler gives every DP rank the same sample count in every step
# (DpBalancedScheduler does within a step: msd-plan place below); the THD
# scheduler computes variable-length rows, megatron full causal rows.
for name in ("megatron", "megatron_docmask"):
    spr = modes[name]["sequences_per_rank"]
    assert spr["min"] == spr["max"] >= 1, (name, spr)
assert modes["colocated_samples"]["sequences_per_rank"]["max"] > modes["colocated_samples"]["sequences_per_rank"]["min"]
assert [n for n, m in modes.items() if m["rows"] == "varlen"] == ["megatron_dp_balanced"], modes
assert [n for n, m in modes.items() if m["attention"] == "row"] == ["megatron"], modes
assert modes["megatron"]["padding_fraction"] == 0 and modes["megatron_docmask"]["padding_fraction"] == 0, modes
# Megatron-style packing leaves padding only at image-text documents and the
# last sequences; next-fit by sample count leaves more.
assert modes["colocated_tokens"]["padding_fraction"] < modes["colocated_samples"]["padding_fraction"], modes
for msd in ("msd_tokens", "msd_greedy", "msd_kk"):
    for base in ("colocated_samples", "colocated_tokens", "megatron", "megatron_docmask", "megatron_dp_balanced"):
        assert f"{msd}_over_{base}" in report["speedup"], report["speedup"]
assert report["speedup"]["msd_greedy_over_colocated_samples"] > 1, report["speedup"]
print("json ok")
PY

status=0
"$plan" simulate --compare --gpus 64 --tp 4 --device a100 2>/dev/null || status=$?
[ "$status" -eq 2 ] || { echo "FAIL: --device a100 gave exit $status, expected 2"; exit 1; }
# Variable-length rows under CP: every piece split over the CP ranks on its own (THD).
json=$("$plan" simulate --compare --gpus 64 --tp 4 --cp 2 --seq-len 16384 --steps 3 --micro-batch-shape varlen \
  --cuts balance --micro-batch-count variable --json)
/usr/bin/python3 - "$json" <<'PY'
import json, sys
report = json.loads(sys.argv[1])
modes = report["modes"]
msd = modes["msd_greedy"]
assert msd["rows"] == "varlen" and msd["positions"] == report["positions"], msd
assert msd["steps"] == modes["megatron_docmask"]["steps"], (msd["steps"], modes["megatron_docmask"]["steps"])
print("thd json ok")
PY
# Context parallelism: megatron_dynamic_cp joins (a CP size per sample), and
# without CP it is refused by name.
json=$("$plan" simulate --compare --gpus 128 --tp 4 --cp 2 --samples-per-gpu 24 --seq-len 32768 --steps 3 \
  --micro-batches 2 --long-share 0.3 --json)
/usr/bin/python3 - "$json" <<'PY'
import json, sys
report = json.loads(sys.argv[1])
modes = report["modes"]
assert report["cp"] == 2 and "megatron_dynamic_cp" in modes, sorted(modes)
d = modes["megatron_dynamic_cp"]
assert d["rows"] == "varlen" and d["positions"] == report["positions"] and d["tokens_per_s"] > 0, d
assert "msd_greedy_over_megatron_dynamic_cp" in report["speedup"], report["speedup"]
print("cp json ok")
PY
status=0
"$plan" simulate --compare --gpus 64 --tp 4 --pp 2 --cp 2 2>/dev/null || status=$?
[ "$status" -eq 0 ] || { echo "FAIL: --cp 2 --pp 2 gave exit $status (dynamic CP is left out, not refused)"; exit 1; }

# msd-plan place: every placement the same positions, Megatron's with their
# document order; megatron_dynamic_cp (CP ranks) is refused by name.
"$plan" place --dp 4 --steps 8 --seq-len 2048 --samples-per-gpu 6 \
  --modes megatron,megatron_docmask,megatron_dp_balanced,msd_greedy,msd_greedy_varlen >"$WORK/place.json"
/usr/bin/python3 - "$WORK/place.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
docs = r["documents"]
assert sum(docs) == r["positions"] > 0 and r["dropped_positions"] >= 0, (sum(docs), r["positions"])
batch = r["megatron_batch"]
shape = {"megatron": ("fixed", "row"), "megatron_docmask": ("fixed", "document"),
         "megatron_dp_balanced": ("varlen", "document"), "msd_greedy": ("fixed", "document"),
         "msd_greedy_varlen": ("varlen", "document")}
for name, p in r["placements"].items():
    assert (p["rows"], p["attention"]) == shape[name], (name, p["rows"], p["attention"])
    pieces = [[] for _ in docs]
    for step in p["steps"]:
        assert len(step) == r["dp"], name
        for rank in step:
            for mb in rank:
                for seq in mb:
                    for doc, begin, length in seq:
                        pieces[doc].append((begin, length))
    for d, parts in enumerate(pieces):  # every position of every document once
        at = 0
        for begin, length in sorted(parts):
            assert begin == at, (name, d, parts)
            at += length
        assert at == docs[d], (name, d, at, docs[d])
    if name.startswith("megatron") and name != "megatron_dp_balanced":
        assert sorted(p["document_order"]) == list(range(len(docs))), name
        for step in p["steps"]:
            for rank in step:
                assert len(rank) == batch["micro_batches"], (name, len(rank))
                assert all(len(mb) == batch["micro_batch_size"] for mb in rank), name
                assert all(sum(x[2] for x in seq) == r["seq_len"] for mb in rank for seq in mb), name
    if name == "megatron_dp_balanced":
        for step in p["steps"]:
            assert len({len(rank) for rank in step}) == 1, name
print("place ok")
PY
status=0
"$plan" place --modes megatron_dynamic_cp >/dev/null 2>"$WORK/err" || status=$?
[ "$status" -eq 2 ] && grep -q "megatron_dynamic_cp" "$WORK/err" || { echo "FAIL: place megatron_dynamic_cp gave $status"; exit 1; }

json=$("$plan" "${args[@]}" --micro-batch-shape varlen --json)
/usr/bin/python3 - "$json" <<'PY'
import json, sys
report = json.loads(sys.argv[1])
assert report["micro_batch_shape"] == "varlen" and report["cost_model"]["calibrated"], report
modes = report["modes"]
assert modes["msd_greedy"]["padding_fraction"] < 0.02, modes["msd_greedy"]
print("varlen json ok")
PY
echo "ok"
