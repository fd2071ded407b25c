#!/usr/bin/env bash
# msd-bench sweep at a tiny size: every row is there with a speedup per
# baseline, the averages and bests are those of the rows, the CSV has a line
# per row and the plot is a PNG.
source "$(dirname "$0")/common.sh"
timeout 240 "$MSD_BUILD/app/msd-bench" sweep --seq-lens 4096,16384 --dps 8,16 --pps 1,4 --mixes text_image,demo \
  --steps 2 --samples-per-gpu 8 --json --csv "$WORK/rows.csv" --plot "$WORK/rows.png" >"$WORK/out.json"
cat "$WORK/out.json"
/usr/bin/python3 - "$WORK/out.json" "$WORK/rows.csv" "$WORK/rows.png" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
rows = report["rows"]
assert len(rows) == 2 * 2 * 2 * 2, len(rows)
for base in ("colocated_samples", "colocated_tokens"):
    values = [r["speedup"][base] for r in rows]
    assert all(v > 0 for v in values), values
    assert abs(report["average"][base] - sum(values) / len(values)) < 1e-9, (base, report["average"])
    assert report["best"][base] == max(values), (base, report["best"])
    for seq_len in (4096, 16384):
        mine = [r["speedup"][base] for r in rows if r["seq_len"] == seq_len]
        assert abs(report["by_seq_len"][str(seq_len)][base] - sum(mine) / len(mine)) < 1e-9
for r in rows:
    for key in ("dp_max_over_mean", "padding_fraction"):
        assert sorted(r[key]) == ["colocated_samples", "colocated_tokens", "msd_greedy"], (key, r[key])
    assert r["dp_max_over_mean"]["msd_greedy"] == r["msd_greedy_dp_max_over_mean"], r
assert {(r["seq_len"], r["dp"], r["pp"], r["mix"]) for r in rows} == \
    {(s, d, p, m) for s in (4096, 16384) for d in (8, 16) for p in (1, 4) for m in ("text_image", "demo")}
lines = open(sys.argv[2]).read().splitlines()
assert len(lines) == 1 + len(rows) and lines[0].startswith("seq_len,dp,pp,mix"), lines[:2]
assert open(sys.argv[3], "rb").read(8) == b"\x89PNG\r\n\x1a\n", "not a PNG"
print("sweep ok")
PY
# The same rows with msd_greedy on variable-length micro-batches and the
# planner's analytic cost: the baselines' rows are unchanged, msd_greedy pads
# only the rounding of its rows, and every row names its cost model.
timeout 240 "$MSD_BUILD/app/msd-bench" sweep --seq-lens 4096,16384 --dps 8,16 --pps 1,4 --mixes text_image,demo \
  --steps 2 --samples-per-gpu 8 --json --micro-batch-shape varlen --cost-model analytic >"$WORK/varlen.json"
/usr/bin/python3 - "$WORK/out.json" "$WORK/varlen.json" <<'PY'
import json, sys
fixed, varlen = (json.load(open(p)) for p in sys.argv[1:3])
assert fixed["micro_batch_shape"] == "fixed" and varlen["micro_batch_shape"] == "varlen"
for f, v in zip(fixed["rows"], varlen["rows"]):
    assert f["cost_model"]["calibrated"] and not v["cost_model"]["calibrated"], (f["cost_model"], v["cost_model"])
    assert f["cost_model"]["r_squared"] > 0.99, f["cost_model"]
    for base in ("colocated_samples", "colocated_tokens"):
        assert f["dp_max_over_mean"][base] == v["dp_max_over_mean"][base], (base, f, v)
    assert v["padding_fraction"]["msd_greedy"] < 0.02, v
print("varlen sweep ok")
PY
set +e
"$MSD_BUILD/app/msd-bench" sweep --mixes nope >"$WORK/err" 2>&1
rc=$?
set -e
[ $rc -ne 0 ] && grep -q -- "--mixes" "$WORK/err" || { echo "FAIL: bad --mixes not reported"; cat "$WORK/err"; exit 1; }
echo "bench_sweep: ok"
