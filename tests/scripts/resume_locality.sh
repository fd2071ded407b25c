#!/usr/bin/env bash
# The locality order (source.NAME.shuffle = block, the default for compressed
# JSON lines and Parquet) keeps the determinism contract: a job over a
# .jsonl.zst source and a Parquet one, in blocks small enough that the tiny
# data holds many, gives the same batches again, and on more loader threads;
# killed with SIGKILL mid-run it resumes to exactly the uninterrupted run's
# batches, also with another number of loaders (which spreads the blocks
# over the loaders otherwise); msd-replay verifies its trace; the summary
# reports each source's order and its locality against the uniform shuffle's.
source "$(dirname "$0")/common.sh"
steps=24
"$MSD_BUILD/app/msd-datagen" --out "$WORK/zst" --scale tiny --images 0 --indexed-docs 0 --long-docs 0 \
  --compress zst --quiet >/dev/null
"$MSD_BUILD/app/msd-datagen" --out "$WORK/pq" --scale tiny --images 0 --indexed-docs 0 --long-docs 0 \
  --format parquet --compress snappy --quiet >/dev/null
write_tiny_config "$WORK/job.ini"
sed -i -e "s/^steps = .*/steps = $steps/" -e "s/^time_scale = .*/time_scale = 30/" \
  -e "s|^path = .*/web/\*.jsonl|path = $WORK/zst/web/*.jsonl.zst\nshuffle_block_records = 16\nshuffle_window_blocks = 4|" \
  -e "/^\[source.corpus\]/,/^$/d" -e "s/^sources = .*/sources = web, books, images, pq/" "$WORK/job.ini"
cat >>"$WORK/job.ini" <<INI

[source.pq]
format = parquet
path = $WORK/pq/web/*.parquet
weight = 0.3
shuffle_block_records = 16
shuffle_window_blocks = 4
cache_mib = 1
INI
# The killed run needs slow steps (time_scale 30) for the kill to land
# mid-run; the others run without emulated compute (it does not change the
# batches).
fast=(--emulator.time_scale=0)

run_reference "$WORK/job.ini" "$WORK/full.json" "${fast[@]}" --checkpoint.dir="$WORK/full"
digests() { grep -o '"step_digests":\[[^]]*\]' "$1" | tr -d '[]"' | cut -d: -f2 | tr ',' '\n'; }
full_digests=$(digests "$WORK/full.json")
[ "$(echo "$full_digests" | wc -l)" = $steps ] || { echo "FAIL: uninterrupted run delivered the wrong number of steps"; exit 1; }
python3 - "$WORK/full.json" <<'PY' || { echo "FAIL: the summary's shuffle"; exit 1; }
import json, sys
shuffle = json.load(open(sys.argv[1]))["shuffle"]
for name in ("web", "pq"):
    s = shuffle[name]
    assert s["order"] == "block" and s["block_records"] == 16 and s["window_blocks"] == 4, s
    assert s["pairs"] > 0 and 0 < s["gap_vs_uniform"] < 1, s
assert shuffle["books"]["order"] == "uniform" and shuffle["images"]["order"] == "uniform", shuffle
print("shuffle:", {n: round(s["gap_vs_uniform"], 3) for n, s in shuffle.items()})
PY

run_reference "$WORK/job.ini" "$WORK/again.json" "${fast[@]}" --loader.threads=3
[ "$(digests "$WORK/again.json")" = "$full_digests" ] ||
  { echo "FAIL: a second run on 3 loader threads differs"; exit 1; }
"$MSD_BUILD/app/msd-replay" verify "$WORK/full/trace.h5" | grep -q "$steps steps from step 0 equal" ||
  { echo "FAIL: msd-replay verify of the block-order run"; "$MSD_BUILD/app/msd-replay" verify "$WORK/full/trace.h5"; exit 1; }

# A loader killed once the planner checkpointed step 8, then resumed.
n=$("$MSD_RUN" --config "$WORK/job.ini" --print-world-size)
timeout 120 $MSD_MPIEXEC -n "$n" "$MSD_RUN" --config "$WORK/job.ini" --checkpoint.dir="$WORK/a" \
  --checkpoint.planner_every=4 --output.progress_every=1 --output.log_level=info >"$WORK/a.log" 2>&1 &
launcher=$!
wait_until 60 "the planner checkpoint of step 8" eval "ls $WORK/a/planner-*08.h5 >/dev/null 2>&1"
wait_until 10 "the loader's process" found_rank_pid "$WORK/job.ini" 1
kill -KILL "$pid"
set +e
wait $launcher
rc=$?
set -e
[ $rc -ne 0 ] && [ $rc -ne 124 ] || { echo "FAIL: the job did not end with the SIGKILL (status $rc)"; exit 1; }
cp -r "$WORK/a" "$WORK/a2"
check_resumed() {
  local summary=$1 label=$2 first
  first=$(json_field "$summary" first_step)
  [ "$first" -gt 0 ] || { echo "FAIL: $label did not resume"; exit 1; }
  if [ "$(digests "$summary")" != "$(echo "$full_digests" | tail -n +$((first + 1)))" ]; then
    echo "FAIL: $label: step digests from step $first differ from the uninterrupted run"
    exit 1
  fi
  echo "$label: resumed at step $first, steps $first..$((steps - 1)) identical to the uninterrupted run"
}
run_reference "$WORK/job.ini" "$WORK/a.json" "${fast[@]}" --checkpoint.dir="$WORK/a" --resume
check_resumed "$WORK/a.json" "loader killed, 2 loaders"
run_reference "$WORK/job.ini" "$WORK/a2.json" "${fast[@]}" --checkpoint.dir="$WORK/a2" --resume --loaders 3
check_resumed "$WORK/a2.json" "loader killed, resumed with 3 loaders"
echo "resume_locality: the block order's stream is the same after a restart"
