#!/usr/bin/env bash
# Online scaling (docs/scaling.md): loaders move from the text source to the
# image source before its weight rises, and the batch stream does not change
# — against the static assignment and 1 and 4 loaders; a moved loader closes
# its old source (open sources at the end = loaders); a checkpoint taken after
# a move resumes exactly, with the same and with another number of loaders;
# a shadow still takes over a loader under online scaling.
source "$(dirname "$0")/common.sh"
steps=24
cat >"$WORK/job.ini" <<INI
[job]
steps = $steps
global_batch = 16
seq_len = 512
micro_batches = 2
seed = 5
[topology]
dp = 2
loaders = 5
scaling_lookahead_steps = 8
[mix]
sources = web, images
schedule = piecewise
[source.web]
format = jsonl
path = $DATA/web/*.jsonl
weight = 0:0.9, 12:0.1
[source.images]
format = wds
path = $DATA/images/*.tar
weight = 0:0.1, 12:0.9
[tokenizer]
vocab = $DATA/vocab.tiktoken
[image]
max_side = 64
patch = 16
[loader]
window_mb = 8
[emulator]
time_scale = 1
[output]
progress_every = 0
log_level = warn
INI
# py FILE EXPR: a value of the summary JSON (j is the object).
py() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($2)" "$1"; }
digests() { py "$1" "'\n'.join(j['step_digests'])"; }

run_job "$WORK/job.ini" --summary-json "$WORK/static.json" >/dev/null
ref=$(json_field "$WORK/static.json" batch_digest)
[ "$(py "$WORK/static.json" "j['moves']")" = 0 ] || { echo "FAIL: moves under topology.scaling = static"; exit 1; }

run_job "$WORK/job.ini" --topology.scaling=online --output.log_level=info --summary-json "$WORK/online.json" \
  >"$WORK/online.log" 2>&1
moves=$(py "$WORK/online.json" "j['moves']")
echo "online, 5 loaders: $moves moves: $(py "$WORK/online.json" "j['move_log']")"
[ "$moves" -ge 1 ] || { echo "FAIL: no move under online scaling"; cat "$WORK/online.log"; exit 1; }
# Proactive: to images, before step 12 where its weight rises (a busy
# machine may add a reactive move later; the first is the schedule's).
py "$WORK/online.json" "(lambda m: m['to'] == 'images' and m['step'] < 12 and m['why'] == 'proactive')(j['move_log'][0])" |
  grep -qx True || { echo "FAIL: the first move was not a proactive one to images before step 12"; exit 1; }
[ "$(grep -c '\] move at step' "$WORK/online.log")" = "$moves" ] || { echo "FAIL: not one log line per move"; exit 1; }
# The old source is closed: each of the 5 loaders holds exactly one open source.
[ "$(py "$WORK/online.json" "j['loaders']['open_sources']")" = 5 ] ||
  { echo "FAIL: open sources at the end: $(py "$WORK/online.json" "j['loaders']")"; exit 1; }
[ "$(json_field "$WORK/online.json" batch_digest)" = "$ref" ] || { echo "FAIL: online moves changed the batch stream"; exit 1; }
for loaders in 1 4; do
  run_job "$WORK/job.ini" --topology.scaling=online --loaders $loaders --summary-json "$WORK/l$loaders.json" >/dev/null
  [ "$(json_field "$WORK/l$loaders.json" batch_digest)" = "$ref" ] ||
    { echo "FAIL: online with $loaders loader(s) changed the batch stream"; exit 1; }
  echo "online, $loaders loader(s): $(py "$WORK/l$loaders.json" "j['moves']") moves, same digest"
done

# Checkpoints every 4 steps; resume at step 8, after the moves.
online=(--topology.scaling=online --checkpoint.planner_every=4 --checkpoint.keep=10)
run_job "$WORK/job.ini" "${online[@]}" --checkpoint.dir="$WORK/ck" >/dev/null
expected=$(digests "$WORK/static.json" | tail -n +9)
for loaders in 5 3; do
  cp -r "$WORK/ck" "$WORK/ck$loaders"
  run_job "$WORK/job.ini" "${online[@]}" --checkpoint.dir="$WORK/ck$loaders" --resume-step 8 --loaders $loaders \
    --output.log_level=info --summary-json "$WORK/r$loaders.json" >"$WORK/r$loaders.log" 2>&1
  [ "$(json_field "$WORK/r$loaders.json" first_step)" = 8 ] || { echo "FAIL: did not resume at step 8"; exit 1; }
  [ "$(digests "$WORK/r$loaders.json")" = "$expected" ] ||
    { echo "FAIL: resume after a move with $loaders loaders: step digests differ"; exit 1; }
  grep -q "resume: loaders restored to the checkpoint's assignment" "$WORK/r$loaders.log" ||
    { echo "FAIL: $loaders loaders: the recorded assignment was not restored"; grep resume "$WORK/r$loaders.log"; exit 1; }
  [ "$(py "$WORK/r$loaders.json" "j['loaders']['open_sources']")" = $loaders ] ||
    { echo "FAIL: $loaders loaders after the resume: $(py "$WORK/r$loaders.json" "j['loaders']")"; exit 1; }
  echo "resumed at step 8 with $loaders loaders: $(grep -o 'restored.*' "$WORK/r$loaders.log"), steps 8..$((steps - 1)) identical"
done

# A shadow takes over a hung loader while loaders move.
run_job "$WORK/job.ini" --topology.scaling=online --topology.shadow_loaders=1 --fault.loader=4 --fault.kind=hang \
  --fault.step=2 --loader.deadline_ms=400 --summary-json "$WORK/shadow.json" >"$WORK/shadow.log" 2>&1
[ "$(json_field "$WORK/shadow.json" takeover_count)" = 1 ] || { echo "FAIL: no takeover"; cat "$WORK/shadow.log"; exit 1; }
[ "$(json_field "$WORK/shadow.json" batch_digest)" = "$ref" ] || { echo "FAIL: takeover with moves changed the stream"; exit 1; }
echo "shadow took over loader 4 with $(py "$WORK/shadow.json" "j['moves']") moves: same digest"
echo "scaling: online moves keep the batch stream ($ref), close the old source and survive --resume"
