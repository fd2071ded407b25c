#!/usr/bin/env bash
# Resume with a changed mixture (docs/checkpoint.md): a run SIGKILLed after
# its checkpoint of step 8 resumes under four changes, each in turn: weights
# changed; a source added; a source removed; a source's files changed (one
# removed, one added, the folder moved). For each:
#   - without --resume-accept-changed-mix the resume is refused (status 2),
#     listing the change; with it, the warning lists it;
#   - resumed with the flag, SIGKILLed after its checkpoint of step 16 and
#     resumed again (no flag: the checkpoints now hold the new mixture), it
#     delivers from step 16 the documents (step_document_digests) and
#     batches (step_digests) of a run resumed once from a copy of the same
#     checkpoint: a pure function of the checkpoint, the configuration and
#     the seed; msd-replay verify re-plans that run's trace from the old
#     checkpoint across the change;
#   - the steps before the change are the uninterrupted old run's;
#   - tests/tools/check_changed_mix.py checks the rules on the traces:
#     within the interrupted epoch no document comes twice and, where the
#     epoch ends inside the run, none is missing; a removed file's
#     unconsumed documents are dropped, as many as the warning says; an
#     added source starts at cursor 0, a removed one stops; each step's
#     quotas follow the new weights from the resume step on.
source "$(dirname "$0")/common.sh"
steps=24
CHECK="/usr/bin/python3 $MSD_SOURCE/tests/tools/check_changed_mix.py --dump $MSD_BUILD/tests/mix_dump"
REPLAY="$MSD_BUILD/app/msd-replay"
cp -r "$DATA/books" "$WORK/books"
rm -rf "$WORK/books/.msd"
"$MSD_BUILD/app/msd-datagen" --out "$WORK/other" --scale tiny --seed 99 --quiet >/dev/null

# old_config FILE: three sources, the books a private copy.
old_config() {
  write_tiny_config "$1"
  sed -i -e "s/^steps = .*/steps = $steps/" -e "s/^time_scale = .*/time_scale = 30/" \
    -e "s/^sources = .*/sources = web, books, corpus/" -e "s|^path = $DATA/books/\*.jsonl|path = $WORK/books/*.jsonl|" \
    "$1"
  # Without the images: a source of 64 samples would finish its epoch in every scenario alike.
  python3 - "$1" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
text = re.sub(r"\[source\.images\]\n(?:[^\[\n][^\n]*\n)*\n?", "", text)
open(sys.argv[1], "w").write(text)
PY
  printf '[checkpoint]\nplanner_every = 4\nkeep = 100\n' >>"$1"
}
old_config "$WORK/old.ini"
fast=(--emulator.time_scale=0.3)

# digests FILE KEY: the array KEY of a summary, one value a line.
digests() { grep -o "\"$2\":\[[^]]*\]" "$1" | tr -d '[]"' | cut -d: -f2 | tr ',' '\n'; }

# kill_after CONFIG DIR STEP LOG [msd-run options]: runs the job on DIR and
# SIGKILLs world rank 1 (a loader) once the planner checkpoint of STEP exists.
kill_after() {
  local config=$1 dir=$2 step=$3 log=$4 n victim="" pid rc=0
  shift 4
  n=$("$MSD_RUN" --config "$config" --checkpoint.dir="$dir" --print-world-size "$@")
  timeout 120 $MSD_MPIEXEC -n "$n" "$MSD_RUN" --config "$config" --checkpoint.dir="$dir" --output.progress_every=1 \
    --output.log_level=info "$@" >"$log" 2>&1 &
  local launcher=$!
  wait_until 60 "the planner checkpoint of step $step in $dir" test -e "$dir/planner-$(printf %012d "$step").h5"
  for pid in $(pgrep -f "msd-run --config $config"); do
    if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=1"; then victim=$pid; fi
  done
  [ -n "$victim" ] || { echo "FAIL: world rank 1 not found (did the run end early?)"; tail "$log"; exit 1; }
  kill -KILL "$victim"
  wait $launcher || rc=$?
  [ $rc -ne 0 ] && [ $rc -ne 124 ] || { echo "FAIL: the job ended with status $rc after the SIGKILL"; tail "$log"; exit 1; }
}

# The uninterrupted old run, and the old run killed after its checkpoint of step 8.
run_reference "$WORK/old.ini" "$WORK/full.json" "${fast[@]}" --checkpoint.dir="$WORK/full"
kill_after "$WORK/old.ini" "$WORK/killed" 8 "$WORK/killed.log"

# scenario NAME CONFIG WARNING...: the resumes under CONFIG from the killed
# run's checkpoint of step 8; each WARNING must be a line of the warning.
scenario() {
  local name=$1 config=$2 rc=0 line
  shift 2
  cp -r "$WORK/killed" "$WORK/$name-a"
  cp -r "$WORK/killed" "$WORK/$name-b"
  run_job "$config" "${fast[@]}" --checkpoint.dir="$WORK/$name-a" --resume >"$WORK/$name-refused.log" 2>&1 || rc=$?
  [ $rc = 2 ] && grep -q "resume-accept-changed-mix" "$WORK/$name-refused.log" ||
    { echo "FAIL: $name: a resume without the flag was not refused with status 2 (got $rc)"; tail "$WORK/$name-refused.log"; exit 1; }
  # Resumed once, to the end.
  run_job "$config" "${fast[@]}" --checkpoint.dir="$WORK/$name-b" --resume --resume-accept-changed-mix \
    --summary-json "$WORK/$name-b.json" >"$WORK/$name-b.log" 2>&1 ||
    { echo "FAIL: $name: the resume with the flag failed"; grep -v "bad sample" "$WORK/$name-b.log" | tail; exit 1; }
  for line in "$@"; do
    grep -qF -- "$line" "$WORK/$name-b.log" || { echo "FAIL: $name: the warning lacks '$line'"; grep -A8 "mixture changed" "$WORK/$name-b.log"; exit 1; }
  done
  [ "$(json_field "$WORK/$name-b.json" first_step)" = 8 ] || { echo "FAIL: $name: did not resume at step 8"; exit 1; }
  # Resumed with the flag, killed after step 16's checkpoint, resumed again without it.
  kill_after "$config" "$WORK/$name-a" 16 "$WORK/$name-a1.log" --resume --resume-accept-changed-mix
  run_job "$config" "${fast[@]}" --checkpoint.dir="$WORK/$name-a" --resume --summary-json "$WORK/$name-a.json" \
    >"$WORK/$name-a2.log" 2>&1 || { echo "FAIL: $name: the second resume failed"; tail "$WORK/$name-a2.log"; exit 1; }
  [ "$(json_field "$WORK/$name-a.json" first_step)" = 16 ] || { echo "FAIL: $name: the second resume is not at step 16"; exit 1; }
  for key in step_document_digests step_digests; do
    if [ "$(digests "$WORK/$name-a.json" $key)" != "$(digests "$WORK/$name-b.json" $key | tail -n +9)" ]; then
      echo "FAIL: $name: $key of steps 16..$((steps - 1)) differ between the twice and the once resumed runs"
      diff <(digests "$WORK/$name-b.json" $key | tail -n +9) <(digests "$WORK/$name-a.json" $key) | head
      exit 1
    fi
  done
  # The re-plan from the old checkpoint, across the change.
  "$REPLAY" verify "$WORK/$name-b/trace.h5" --checkpoint "$WORK/killed/planner-000000000008.h5" >"$WORK/$name-verify.txt" ||
    { echo "FAIL: $name: msd-replay verify across the change"; cat "$WORK/$name-verify.txt"; exit 1; }
  $CHECK --old-trace "$WORK/$name-b/trace.h5.before-8" --reference-trace "$WORK/full/trace.h5" \
    --new-trace "$WORK/$name-b/trace.h5" --checkpoint "$WORK/$name-b/planner-000000000008.h5" --change-step 8 \
    --warnings "$WORK/$name-b.log" ||
    { echo "FAIL: $name: the rules of a changed mixture (above)"; exit 1; }
  echo "$name: refused without the flag; steps 16..$((steps - 1)) of the twice resumed run equal the once resumed one's; replay verifies across the change; the rules hold"
}

# 1. Weights changed.
sed -e "s/^weight = 0:0.6, 8:0.2/weight = 0.15/" -e "s/^weight = 0:0.1, 8:0.4/weight = 0.6/" "$WORK/old.ini" >"$WORK/weights.ini"
scenario weights "$WORK/weights.ini" "source.web.weight: '0:0.6, 8:0.2' -> '0:0.15' from step 8" \
  "source.books.weight: '0:0.1, 8:0.4' -> '0:0.6' from step 8"

# 2. A source added.
cp "$WORK/old.ini" "$WORK/added.ini"
sed -i -e "s/^sources = .*/sources = web, books, corpus, extra/" "$WORK/added.ini"
printf '[source.extra]\nformat = jsonl\npath = %s\nweight = 0.3\n' "$WORK/other/web/*.jsonl" >>"$WORK/added.ini"
scenario added "$WORK/added.ini" "source 'extra' added: its stream starts at cursor 0"

# 3. A source removed.
python3 - "$WORK/old.ini" "$WORK/removed.ini" <<'PY'
import re, sys
text = open(sys.argv[1]).read().replace("sources = web, books, corpus", "sources = web, corpus")
open(sys.argv[2], "w").write(re.sub(r"\[source\.books\]\n(?:[^\[\n][^\n]*\n)*\n?", "", text))
PY
scenario removed "$WORK/removed.ini" "source 'books' removed: it stops"

# 4. A source's files changed: books-0001 removed, a new shard added, the folder moved.
cp -r "$WORK/books" "$WORK/books-moved"
rm "$WORK/books-moved/books-0001.jsonl"
cp "$WORK/other/books/books-0000.jsonl" "$WORK/books-moved/books-0002.jsonl"
sed -e "s|^path = $WORK/books/\*.jsonl|path = $WORK/books-moved/*.jsonl|" "$WORK/old.ini" >"$WORK/files.ini"
scenario files "$WORK/files.ini" "source 'books': file $WORK/books/books-0001.jsonl removed (or changed): " \
  "source 'books': file $WORK/books-moved/books-0002.jsonl added: its 12 documents join the rest of epoch"

echo "resume_mix: weights, a source added, a source removed, files added and removed: each resumes as specified"
