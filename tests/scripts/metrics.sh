#!/usr/bin/env bash
# output.metrics: one JSON line per delivered step that agrees with the run's
# summary (steps, tokens, data wait, balance), the same batch stream with and
# without it, tools/plot-metrics makes a PNG of it, a resumed run writes the
# steps it delivers, and a colocated run is refused naming the option.
source "$(dirname "$0")/common.sh"
write_tiny_config "$WORK/job.ini"
run_job "$WORK/job.ini" --summary-json "$WORK/plain.json" >/dev/null
# Set in the INI file for one run and on the command line for another.
write_tiny_config "$WORK/ini.ini" "[output]" "metrics = $WORK/ini.jsonl"
run_job "$WORK/ini.ini" --summary-json "$WORK/ini.json" >/dev/null
run_job "$WORK/job.ini" --summary-json "$WORK/summary.json" --metrics "$WORK/metrics.jsonl" --loaders 3 >/dev/null
/usr/bin/python3 - "$WORK" <<'PY'
import json, math, sys
work = sys.argv[1]
plain = json.load(open(f"{work}/plain.json"))
for name in ("summary", "ini"):
    summary = json.load(open(f"{work}/{name}.json"))
    assert summary["batch_digest"] == plain["batch_digest"], "metrics changed the batch stream"
    lines = [json.loads(l) for l in open(f"{work}/{'metrics' if name == 'summary' else 'ini'}.jsonl")]
    assert len(lines) == summary["steps"] == 8, (len(lines), summary["steps"])
    assert [l["step"] for l in lines] == list(range(8)), [l["step"] for l in lines]
    assert sum(l["tokens"] for l in lines) == summary["tokens"], (sum(l["tokens"] for l in lines), summary["tokens"])
    assert all(l["tokens"] > 0 for l in lines)
    # The clients' waits as the planner got them with acknowledgements.
    wait = sum(l["data_wait_s"] for l in lines)
    assert abs(wait - summary["data_wait_s"]) <= 1e-9 * max(1.0, wait), (wait, summary["data_wait_s"])
    assert sum(l["data_wait_max_s"] for l in lines) >= summary["data_wait_max_s"] - 1e-9
    assert all(l["data_wait_max_s"] >= l["data_wait_s"] >= 0 for l in lines)
    # The planner's cost balance is the summary's (cp = 1: both sum piece costs).
    for l, ratio in zip(lines, summary["dp_max_over_mean"]["per_step"]):
        assert abs(l["dp_max_over_mean"]["cost"] - ratio) <= 1e-9 * ratio, (l["step"], l["dp_max_over_mean"], ratio)
        assert l["dp_max_over_mean"]["device"] >= 1.0, l
    walls = [l["wall_s"] for l in lines]
    assert walls == sorted(walls) and all(l["step_s"] > 0 for l in lines), walls
    assert abs(sum(l["step_s"] for l in lines) - walls[-1]) < 1e-6, (sum(l["step_s"] for l in lines), walls[-1])
    assert set(lines[0]["sources"]) == {"web", "books", "images", "corpus"}, lines[0]["sources"]
    for l in lines:
        for name_, s in l["sources"].items():
            assert s["backlog"] >= 0 and 0.0 <= s["busy"] <= 1.0, (l["step"], name_, s)
        rss = l["rss_bytes"]
        assert rss["planner"] > 1 << 20 and rss["client_max"] > 1 << 20 and rss["loader_max"] > 1 << 20, rss
        assert rss["client_total"] >= rss["client_max"] and rss["loader_total"] >= rss["loader_max"], rss
    assert any(s["busy"] > 0 for l in lines for s in l["sources"].values()), "no loader was ever busy"
    planner_s = sum(l["planner_work_s"] for l in lines)
    assert 0 < planner_s <= summary["planner_work"]["seconds"] + 1e-9, (planner_s, summary["planner_work"])
    assert summary["planner_work"]["messages_received_per_step"] >= 2, summary["planner_work"]  # two acks per step
print(f"metrics: {len(lines)} lines agree with the summary")
PY
/usr/bin/python3 "$MSD_SOURCE/tools/plot-metrics" "$WORK/metrics.jsonl" "$WORK/metrics.png"
/usr/bin/python3 -c 'import sys; assert open(sys.argv[1], "rb").read(8) == b"\x89PNG\r\n\x1a\n", "not a PNG"' "$WORK/metrics.png"
"$MSD_SOURCE/tools/plot-metrics" --help | grep -q "OUT.png" || { echo "FAIL: plot-metrics --help"; exit 1; }

# Resumed at step 4 from a checkpoint: lines for steps 4..7 only.
run_job "$WORK/job.ini" --checkpoint.dir="$WORK/ckpt" --checkpoint.planner_every=2 >/dev/null
run_job "$WORK/job.ini" --checkpoint.dir="$WORK/ckpt" --resume-step 4 --metrics "$WORK/resumed.jsonl" \
  --summary-json "$WORK/resumed.json" >/dev/null
/usr/bin/python3 - "$WORK" <<'PY'
import json, sys
work = sys.argv[1]
lines = [json.loads(l) for l in open(f"{work}/resumed.jsonl")]
summary = json.load(open(f"{work}/resumed.json"))
assert [l["step"] for l in lines] == [4, 5, 6, 7], [l["step"] for l in lines]
assert sum(l["tokens"] for l in lines) == summary["tokens"], (sum(l["tokens"] for l in lines), summary["tokens"])
PY

set +e
run_job "$WORK/job.ini" --mode colocated --metrics "$WORK/colocated.jsonl" >"$WORK/err" 2>&1
rc=$?
run_job "$WORK/job.ini" --metrics "$WORK/no/such/dir/m.jsonl" >"$WORK/err2" 2>&1
rc2=$?
set -e
[ $rc -ne 0 ] && grep -q "output.metrics" "$WORK/err" || { echo "FAIL: colocated metrics not refused"; cat "$WORK/err"; exit 1; }
[ $rc2 -ne 0 ] && grep -q "output.metrics" "$WORK/err2" || { echo "FAIL: unwritable metrics not reported"; cat "$WORK/err2"; exit 1; }
echo "metrics: ok"
