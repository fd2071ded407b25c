#!/usr/bin/env bash
# msd-bench sweep at a tiny size: every row is there (the CP rows too) with a
# ratio per seed for every comparison it has, the summaries are the geometric
# means of the rows' ratios with an interval around them, every comparison
# names its row shapes, Megatron's GPTDataset placements give every DP rank the
# same sequence count, megatron_dynamic_cp is compared in the CP rows only,
# msd's cut-aware, variable micro-batch placements (with and without the hold)
# run in every row (THD rows under CP), msd's best placement is named with
# its comparisons, the sensitivity rows are there, the CSV has a line per row
# and the plot is a PNG.
source "$(dirname "$0")/common.sh"
timeout 240 "$MSD_BUILD/app/msd-bench" sweep --seq-lens 4096,32768 --dps 8 --pps 1,4 --mixes text_image,pile \
  --cps 2 --cp-seq-lens 32768 --steps 3 --seeds 2 --resamples 200 --sequences-per-rank 1 --json \
  --csv "$WORK/rows.csv" --plot "$WORK/rows.png" >"$WORK/out.json"
head -c 2000 "$WORK/out.json"; echo
/usr/bin/python3 - "$WORK/out.json" "$WORK/rows.csv" "$WORK/rows.png" <<'PY'
import json, math, sys
report = json.load(open(sys.argv[1]))
rows = report["rows"]
assert report["seeds"] == 2 and report["steps_per_row"] == 3, report
# A step holds about one sequence of tokens per rank: more documents where they are shorter.
spg = {(r["seq_len"], r["mix"], r["pp"], r["cp"]): r["samples_per_gpu"] for r in rows}
assert spg[(32768, "pile", 1, 1)] > spg[(4096, "pile", 1, 1)] >= 1, spg
assert {(r["seq_len"], r["dp"], r["pp"], r["cp"], r["mix"]) for r in rows} == \
    {(s, 8, p, 1, m) for s in (4096, 32768) for p in (1, 4) for m in ("text_image", "pile")} | \
    {(32768, 8, 1, 2, m) for m in ("text_image", "pile")}
cp1 = [r for r in rows if r["cp"] == 1]
cps = [r for r in rows if r["cp"] > 1]
shapes = {"msd_greedy_over_megatron_docmask": "fixed over fixed",
          "msd_greedy_over_megatron": "fixed over fixed",
          "msd_tokens_over_megatron_docmask": "fixed over fixed",
          "msd_greedy_over_megatron_dp_balanced": "fixed over varlen",
          "msd_greedy_varlen_over_megatron_dp_balanced": "varlen over varlen",
          "msd_greedy_varlen_over_megatron_docmask": "varlen over fixed",
          "megatron_docmask_over_megatron": "fixed over fixed",
          "msd_greedy_over_colocated_samples": "fixed over fixed",
          "calibrated_msd_greedy_over_megatron_docmask": "fixed over fixed",
          "msd_greedy_cut_vmb_over_megatron_docmask": "varlen over fixed",
          "msd_greedy_cut_vmb_hold_over_megatron_dp_balanced": "varlen over varlen"}
for name, rows_shape in shapes.items():
    c = report["comparisons"][name]
    assert c["rows"] == rows_shape, (name, c)
    lo, hi = c["ci95"]
    assert 0 < lo <= c["geomean"] <= hi, (name, c)
    assert c["n"] == len(cp1) * 2, c
    per_row = [r["comparisons"][name] for r in cp1]
    assert all(0 < p["min"] <= p["geomean"] <= p["max"] for p in per_row), per_row
    # The overall geomean is that of every (row, seed) ratio: between the rows' extremes.
    assert min(p["min"] for p in per_row) <= c["geomean"] <= max(p["max"] for p in per_row)
    long = c["seq_len_32k_and_above"]
    assert long["n"] == len(cp1), long
# The CP rows: msd's placements against Megatron's four, dynamic CP only there;
# the cut-aware ones in THD rows (each piece split over the CP ranks), the
# whole-document varlen ones in the cp 1 rows only.
for name in ("msd_greedy_over_megatron_dynamic_cp", "msd_greedy_over_megatron_docmask",
             "megatron_dynamic_cp_over_megatron_dp_balanced", "msd_greedy_cut_vmb_over_megatron_dynamic_cp",
             "msd_greedy_cut_vmb_hold_over_megatron_docmask"):
    c = report["comparisons"][name]["context_parallel"]
    assert c["n"] == len(cps) * 2 and 0 < c["ci95"][0] <= c["geomean"] <= c["ci95"][1], (name, c)
assert "geomean" not in report["comparisons"]["msd_greedy_over_megatron_dynamic_cp"]
assert "context_parallel" not in report["comparisons"]["msd_greedy_varlen_over_megatron_dp_balanced"]
for r in cps:
    assert "msd_greedy_over_megatron_dynamic_cp" in r["comparisons"], r["comparisons"].keys()
    assert not any(k.startswith("msd_greedy_varlen") for k in r["comparisons"]), r["comparisons"].keys()
    assert 0 <= r["padding_fraction"]["msd_greedy_cut_vmb"] < 0.2, r["padding_fraction"]
# msd's best placement: the one of the highest geomean over megatron_docmask over
# every (row, seed), with its comparisons over every Megatron baseline.
best = report["best"]
placements = {k[:-len("_over_megatron_docmask")] for k in report["comparisons"]
              if k.endswith("_over_megatron_docmask") and not k.startswith("megatron")}
def pooled(name):
    c = report["comparisons"][name + "_over_megatron_docmask"]
    return [c] + ([c["context_parallel"]] if "context_parallel" in c else [])
def mean(name):
    parts = pooled(name)
    n = sum(p["n"] for p in parts)
    return n, math.exp(sum(p["n"] * math.log(p["geomean"]) for p in parts) / n)
most = max(mean(p)[0] for p in placements)
want = max((p for p in placements if mean(p)[0] == most), key=lambda p: mean(p)[1])
assert best["placement"] == want, (best["placement"], want, {p: mean(p) for p in placements})
for baseline in ("megatron_docmask", "megatron_dp_balanced", "megatron"):
    mine = best["best_over_" + baseline]
    assert mine["geomean"] == report["comparisons"][want + "_over_" + baseline]["geomean"], mine
    assert mine["ci95"][0] <= mine["geomean"] <= mine["ci95"][1], mine
for baseline in ("megatron_docmask", "megatron_dynamic_cp"):
    c = best["best_over_" + baseline]["context_parallel"]
    assert c["n"] == len(cps) * 2 and c["ci95"][0] <= c["geomean"] <= c["ci95"][1], c
for r in rows:
    for mode in ("megatron", "megatron_docmask"):
        spr = r["sequences_per_rank"][mode]
        assert spr["min"] == spr["max"] >= 1, (mode, r)
    assert not r["cost_model"]["calibrated"] or r["cost_model"]["probes"] > 4, r["cost_model"]
names = [s["name"] for s in report["sensitivity"]]
assert names == ["reference", "gemm_efficiency x0.8", "gemm_efficiency x1.2", "flash_attention 2",
                 "long_share 0.05", "long_share 0.30"], names
for s in report["sensitivity"]:
    assert s["comparisons"]["msd_greedy_over_megatron_docmask"]["geomean"] > 0, s
lines = open(sys.argv[2]).read().splitlines()
assert len(lines) == 1 + len(rows) and lines[0].startswith("seq_len,dp,pp,cp,mix,msd_greedy_over_megatron_docmask"), \
    lines[:2]
assert open(sys.argv[3], "rb").read(8) == b"\x89PNG\r\n\x1a\n", "not a PNG"
print("sweep ok")
PY
# The measured mix: the tiny corpus's document lengths (tools/demo-lengths.py).
/usr/bin/python3 "$MSD_SOURCE/tools/demo-lengths.py" "$DATA"/corpus/*.idx >"$WORK/lengths.txt"
[ "$(wc -l <"$WORK/lengths.txt")" -gt 10 ] || { echo "FAIL: demo-lengths.py wrote too few lengths"; exit 1; }
timeout 240 "$MSD_BUILD/app/msd-bench" sweep --seq-lens 4096 --dps 8 --pps 1 --mixes measured \
  --lengths-file "$WORK/lengths.txt" --cps none --steps 2 --seeds 2 --resamples 100 --no-sensitivity --json \
  >"$WORK/measured.json"
/usr/bin/python3 - "$WORK/measured.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert [row["mix"] for row in r["rows"]] == ["measured"], r["rows"]
assert r["comparisons"]["msd_greedy_over_megatron_docmask"]["geomean"] > 0 and r["sensitivity"] == [], r
print("measured mix ok")
PY
echo "12 tokens" >"$WORK/badlengths.txt"
set +e
"$MSD_BUILD/app/msd-bench" sweep --mixes measured --lengths-file "$WORK/badlengths.txt" >"$WORK/err" 2>&1
rc=$?
set -e
[ $rc -eq 2 ] && grep -q "badlengths.txt:1: '12 tokens' is not a document length" "$WORK/err" ||
  { echo "FAIL: a bad lengths file gave $rc"; cat "$WORK/err"; exit 1; }
set +e
"$MSD_BUILD/app/msd-bench" sweep --mixes measured >"$WORK/err" 2>&1
rc=$?
set -e
[ $rc -eq 2 ] && grep -q "needs --lengths-file" "$WORK/err" || { echo "FAIL: measured without a file gave $rc"; exit 1; }
set +e
"$MSD_BUILD/app/msd-bench" sweep --mixes nope >"$WORK/err" 2>&1
rc=$?
set -e
[ $rc -ne 0 ] && grep -q -- "--mixes" "$WORK/err" || { echo "FAIL: bad --mixes not reported"; cat "$WORK/err"; exit 1; }
echo "bench_sweep: ok"
