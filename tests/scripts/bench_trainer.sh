#!/usr/bin/env bash
# tools/bench-trainer.sh at a tiny size: the emulation check at DP 2 (the
# real 2-process run against the emulation of the same steps), then two rows
# of emulated DP 4 on the tiny dataset's corpus, every placement of each
# stream trained on the same tokens; every key of the JSON is there and
# consistent. The attention is checked against a dense mask first, and a
# placement that drops tokens is refused before any training.
source "$(dirname "$0")/common.sh"
export OMP_NUM_THREADS=1
/usr/bin/python3 "$MSD_SOURCE/examples/bench_trainer.py" --self-check
# --clock cpu: the suite shares the machine; the test checks structure and tokens, not speed.
timeout 300 "$MSD_SOURCE/tools/bench-trainer.sh" --build "$MSD_BUILD" --tiny --clock cpu \
  --corpus "$DATA/corpus/*.idx" --json "$WORK/trainer.json" 2> >(tee "$WORK/stderr" >&2)
/usr/bin/python3 - "$WORK/trainer.json" <<'PY'
import json, math, sys
r = json.load(open(sys.argv[1]))
c = r["emulation_check"]
assert c["dp"] == 2 and c["workers"] in (1, 2) and c["wall_s"] > 0 and c["emulated_s"] > 0, c
assert abs(c["ratio"] - c["emulated_s"] / c["wall_s"]) < 1e-9, c
assert c["emulated_s"] == (c["emulated_two_at_a_time_s"] if c["workers"] == 2 else c["emulated_one_at_a_time_s"]), c
assert r["dp2_real"]["placements"][c["placement"]]["tokens"] == c["tokens"] > 0, r["dp2_real"]
rows = r["emulated_dp"]
assert [(x["dp"], x["seq_len"], x["mix"]) for x in rows] == [(4, 512, "pile"), (4, 512, "pareto")], rows
for row in rows:
    assert row["seeds"] == [1, 2] and row["steps"] == 2 and row["workers"] == c["workers"], row
    p = row["placements"]
    assert len(p) >= 4 and "megatron" in p, sorted(p)
    tokens = {n: v["tokens"] for n, v in p.items()}
    assert len(set(tokens.values())) == 1 and min(tokens.values()) > 0, tokens  # the same tokens everywhere
    for n, v in p.items():
        assert v["seconds_sum"] > 0 and len(v["step_max"]) == 2, (n, v)
        assert abs(v["seconds_sum"] - sum(v["seconds_per_stream"])) < 1e-9, (n, v)
        assert all(m < v["seconds_per_stream"][i] for i, maxima in enumerate(v["step_max"]) for m in maxima), (n, v)
    mine = [n for n in p if n.startswith("msd_")]
    assert row["best"] == min(mine, key=lambda n: p[n]["seconds_sum"]), row["best"]
    s = row["speedup"]
    for key in ("best_over_megatron_docmask", "best_over_megatron_dp_balanced", "best_over_megatron"):
        assert key in s and (s[key] is None) == (key[len("best_over_"):] not in p), (key, s[key])
    for key, v in s.items():
        if v is None:
            continue
        base = key[len("best_over_"):]
        ratios = [b / m for b, m in zip(p[base]["seconds_per_stream"], p[row["best"]]["seconds_per_stream"])]
        assert abs(v["geomean"] - math.exp(sum(map(math.log, ratios)) / len(ratios))) < 1e-9, (key, v)
        assert v["ci95"][0] <= v["geomean"] <= v["ci95"][1], (key, v)
    assert row["cost_fit"] is None or row["cost_fit"]["micro_batches"] > 0, row["cost_fit"]
assert set(r["cost_fit"]) == {"512"}, r["cost_fit"]
print("bench_trainer ok:", {f"{x['mix']}": {k: round(v["geomean"], 3) for k, v in x["speedup"].items() if v}
                            for x in rows}, "check ratio", round(c["ratio"], 3))
PY
# A placement that does not place every token is refused before any training.
"$MSD_BUILD/app/msd-plan" place --json --dp 2 --seq-len 256 --samples-per-gpu 2 --steps 1 --seed 3 >"$WORK/p.json"
/usr/bin/python3 - "$WORK/p.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
name = next(iter(d["placements"]))
sequence = next(q for step in d["placements"][name]["steps"] for mbs in step for seqs in mbs for q in seqs if q)
sequence.pop()  # its first sequence loses its last piece
d["placements"][name].pop("positions", None)
json.dump(d, open(sys.argv[1], "w"))
PY
set +e
/usr/bin/python3 "$MSD_SOURCE/examples/bench_trainer.py" --emulate --placements "$WORK/p.json" \
  --corpus "$DATA/corpus/*.idx" >"$WORK/err" 2>&1
rc=$?
set -e
[ $rc -eq 1 ] && grep -q "not the documents'" "$WORK/err" ||
  { echo "FAIL: a short placement gave $rc"; cat "$WORK/err"; exit 1; }
# A stream the build cannot place is refused before any training.
set +e
"$MSD_SOURCE/tools/bench-trainer.sh" --build "$WORK/nowhere" --tiny >"$WORK/err" 2>&1
rc=$?
set -e
[ $rc -eq 2 ] && grep -q "no build directory" "$WORK/err" ||
  { echo "FAIL: a missing build gave $rc"; cat "$WORK/err"; exit 1; }
echo "bench_trainer: ok"
