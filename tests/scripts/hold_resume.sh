#!/usr/bin/env bash
# The outlier hold across a kill and a resume, with cut-aware cuts and
# variable micro-batches: a dp 4 job whose hold keeps long documents for
# later steps is SIGKILLed (a client) after planner checkpoints, and resumed
# from one that holds documents. From there it delivers exactly the batches
# of the uninterrupted run (step digests), msd-replay verify re-derives its
# trace, and over the whole run every document the stream consumed is
# delivered exactly once: its pieces, in one step, tile its positions once
# (msd-replay export), the same pieces in the same steps as the uninterrupted
# run's. The summary reports the delays.
source "$(dirname "$0")/common.sh"
REPLAY="$MSD_BUILD/app/msd-replay"
steps=20
write_tiny_config "$WORK/job.ini"
sed -i -e "s/^steps = .*/steps = $steps/" -e "s/^time_scale = .*/time_scale = 30/" -e "s/^dp = .*/dp = 4/" \
  -e "s/^global_batch = .*/global_batch = 24/" "$WORK/job.ini"
opts=(--job.micro_batch_shape=varlen --job.cuts=balance --job.micro_batch_count=variable --job.hold_above=0.5
  --job.hold_steps=4 --job.max_positions_per_micro_batch=1024)
# The killed run needs slow steps (time_scale 30) for the kill to land after
# step 12's checkpoint; the others run without emulated compute (same batches).
fast=(--emulator.time_scale=0)

run_reference "$WORK/job.ini" "$WORK/full.json" "${opts[@]}" "${fast[@]}" --checkpoint.trace="$WORK/full-trace.h5"
held=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['placement']['hold']['held'])" "$WORK/full.json")
[ "$held" -gt 0 ] || { echo "FAIL: the uninterrupted run held no document"; exit 1; }

# Killed after the planner checkpoint of step 12; checkpoints every 4 steps.
n=$("$MSD_RUN" --config "$WORK/job.ini" --print-world-size)
timeout 120 $MSD_MPIEXEC -n "$n" "$MSD_RUN" --config "$WORK/job.ini" "${opts[@]}" --checkpoint.dir="$WORK/ckpt" \
  --checkpoint.planner_every=4 --checkpoint.keep=10 --output.progress_every=1 >"$WORK/killed.log" 2>&1 &
launcher=$!
trap 'kill $launcher 2>/dev/null; tail -20 "$WORK/killed.log"; rm -rf "$WORK"' EXIT
wait_until 60 "the planner checkpoint of step 12" test -e "$WORK/ckpt/planner-000000000012.h5"
found_rank_pid "$WORK/job.ini" 5 || { echo "FAIL: world rank 5 (a client) not found"; exit 1; }
kill -KILL "$pid"
rc=0
wait $launcher || rc=$?
trap 'rm -rf "$WORK"' EXIT
[ $rc -ne 0 ] && [ $rc -ne 124 ] || { echo "FAIL: the job ended with status $rc after the SIGKILL"; exit 1; }

# The newest checkpoint up to step 12 whose hold keeps documents: one
# before which the uninterrupted run consumed a document it delivered after.
"$REPLAY" export "$WORK/full-trace.h5" --format json --out "$WORK/full-pieces.json"
resume=$(python3 - "$WORK/full-pieces.json" "$WORK"/ckpt/planner-*.h5 <<'PY'
import json, re, sys
late = [(r["from_step"], r["step"]) for r in json.load(open(sys.argv[1])) if r["from_step"] < r["step"]]
steps = [int(re.search(r"planner-0*(\d+)\.h5$", p).group(1)) for p in sys.argv[2:]]
held = [c for c in steps if c <= 12 and any(since < c <= step for since, step in late)]
print(max(held) if held else "")
PY
)
[ -n "$resume" ] || { echo "FAIL: no planner checkpoint up to step 12 holds a document (the test would not test the hold)"; exit 1; }

run_job "$WORK/job.ini" "${opts[@]}" "${fast[@]}" --checkpoint.dir="$WORK/ckpt" --resume --checkpoint.resume_step="$resume" \
  --summary-json "$WORK/resumed.json" >"$WORK/resumed.log" 2>&1 ||
  { echo "FAIL: the resumed run failed"; tail -20 "$WORK/resumed.log"; exit 1; }
first=$(json_field "$WORK/resumed.json" first_step)
[ "$first" = "$resume" ] || { echo "FAIL: resumed at step $first, not at the checkpoint's $resume"; exit 1; }
digests() { grep -o '"step_digests":\[[^]]*\]' "$1" | tr -d '[]"' | cut -d: -f2 | tr ',' '\n'; }
[ "$(digests "$WORK/resumed.json")" = "$(digests "$WORK/full.json" | tail -n +$((first + 1)))" ] ||
  { echo "FAIL: the resumed run's batches from step $first differ from the uninterrupted run's"; exit 1; }

# Both traces re-derive; the resumed one (the killed run's, continued) holds the same pieces.
"$REPLAY" verify "$WORK/full-trace.h5" >"$WORK/verify-full.out" ||
  { echo "FAIL: verify of the uninterrupted trace"; cat "$WORK/verify-full.out"; exit 1; }
"$REPLAY" verify "$WORK/ckpt/trace.h5" >"$WORK/verify.out" ||
  { echo "FAIL: verify of the resumed trace"; cat "$WORK/verify.out"; exit 1; }
grep -q "$steps steps from step 0 equal" "$WORK/verify.out" || { echo "FAIL: verify: $(cat "$WORK/verify.out")"; exit 1; }
"$REPLAY" export "$WORK/ckpt/trace.h5" --format json --out "$WORK/pieces.json"
"$REPLAY" query "$WORK/ckpt/trace.h5" --mix >"$WORK/mix.csv"
python3 - "$WORK/full-pieces.json" "$WORK/pieces.json" "$WORK/mix.csv" "$steps" <<'PY'
import csv, json, sys
full, resumed = (json.load(open(p)) for p in sys.argv[1:3])
key = lambda r: (r["step"], r["group"], r["micro_batch"], r["sequence"], r["source"], r["cursor"], r["begin"],
                 r["length"], r["from_step"])
assert [key(r) for r in full] == [key(r) for r in resumed], "the resumed run's pieces differ from the uninterrupted run's"
docs = {}
for r in resumed:
    docs.setdefault((r["source"], r["cursor"]), []).append((r["step"], r["begin"], r["length"]))
for doc, pieces in docs.items():
    assert len({step for step, _, _ in pieces}) == 1, f"document {doc} is delivered in steps {pieces}"
    at = 0
    for _, begin, length in sorted(pieces, key=lambda p: p[1]):
        assert begin == at, f"document {doc}: pieces {sorted(pieces)} do not tile its positions once"
        at += length
consumed = sum(int(row["samples"]) for row in csv.DictReader(open(sys.argv[3])))
assert consumed == len(docs), f"the stream consumed {consumed} documents, {len(docs)} were delivered"
late = sum(1 for r in resumed if r["from_step"] < r["step"] and r["begin"] == 0)
assert late > 0, "no document was delivered late"
print(f"hold_resume: {len(docs)} documents over {sys.argv[4]} steps, each delivered once, {late} of them late")
PY
python3 - "$WORK/resumed.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["placement"]
assert p["cuts"] == "balance" and p["micro_batch_count"] == "variable", p
assert 0 < p["pieces"] <= p["megatron_pieces"], p
h = p["hold"]
assert h["held"] > 0 and h["max_delay"] <= 4 and sum(h["histogram"]) == h["held"], h
PY
grep -q "outlier hold (above 0.5 x seq_len, at most 4 steps)" "$WORK/resumed.log" ||
  { echo "FAIL: the summary text does not report the hold"; tail "$WORK/resumed.log"; exit 1; }
echo "hold_resume: resumed at step $first from a checkpoint holding documents; batches, trace and delivery as uninterrupted"
