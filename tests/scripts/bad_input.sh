#!/usr/bin/env bash
# Bad input survival, end to end. Record-level damage (invalid JSON line,
# invalid UTF-8, missing field, corrupt and truncated JPEG, caption without
# image, truncated tar member, zero-length shard) is replaced, counted per kind
# and logged with source, file and offset while the job completes, identically
# on every run; file-level damage (an .idx that contradicts its .bin, a shard
# that does not exist) stops the job before start-up with a message naming it.
source "$(dirname "$0")/common.sh"
cp -r "$DATA" "$WORK/data"
rm -rf "$WORK"/data/*/.msd
D="$WORK/data"
: >"$D/web/web-empty.jsonl"  # a zero-length shard
# Cut the last image shard inside its last member's data: a truncated member.
last_tar=$(ls "$D"/images/*.tar | tail -1)
size=$(stat -c %s "$last_tar")
truncate -s $((size - 2048 - 700)) "$last_tar"

cat >"$WORK/job.ini" <<INI
[job]
steps = 14
global_batch = 32
seq_len = 512
seed = 9
[topology]
dp = 2
loaders = 2
[mix]
sources = web, books, images
[source.web]
format = jsonl
path = $D/web/*.jsonl
weight = 300
[source.books]
format = jsonl
path = $D/books/*.jsonl
weight = 24
[source.images]
format = wds
path = $D/images/*.tar
weight = 64
[tokenizer]
vocab = $D/vocab.tiktoken
[image]
max_side = 64
patch = 16
[emulator]
time_scale = 0.3
[output]
progress_every = 0
log_level = warn
INI
run_job "$WORK/job.ini" --summary-json "$WORK/a.json" >"$WORK/a.log" 2>&1 || { cat "$WORK/a.log"; echo "FAIL: the job did not survive bad input"; exit 1; }
run_job "$WORK/job.ini" --summary-json "$WORK/b.json" >/dev/null 2>&1
[ "$(json_field "$WORK/a.json" batch_digest)" = "$(json_field "$WORK/b.json" batch_digest)" ] ||
  { echo "FAIL: replacements are not deterministic"; exit 1; }
for kind in invalid_json invalid_utf8 missing_field corrupt_jpeg missing_member truncated_member; do
  n=$(grep -o "\"$kind\":[0-9]*" "$WORK/a.json" | cut -d: -f2)
  [ "${n:-0}" -ge 1 ] || { echo "FAIL: no $kind counted"; grep -o '"bad_samples":{[^}]*}' "$WORK/a.json"; exit 1; }
done
grep -q "bad sample in source 'web': .*web-0000.jsonl offset 88635 .*invalid_json" "$WORK/a.log" ||
  { echo "FAIL: the invalid JSON line is not logged with its file and offset"; exit 1; }
grep -q "web-empty.jsonl" "$WORK/a.log" || { echo "FAIL: the zero-length shard is not reported"; exit 1; }
echo "bad samples: $(grep -o '"bad_samples":{[^}]*}' "$WORK/a.json")"

# An .idx that does not match its .bin: a clear error before start-up.
cat >"$WORK/corpus.ini" <<INI
[job]
steps = 2
global_batch = 4
seq_len = 512
[mix]
sources = corpus
[source.corpus]
format = indexed
path = $D/corpus/*.idx
INI
bin=$(ls "$D"/corpus/*.bin | head -1)
truncate -s 1000 "$bin"
set +e
run_job "$WORK/corpus.ini" >"$WORK/c.log" 2>&1
rc=$?
set -e
[ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "$(basename "$bin")" "$WORK/c.log" ||
  { echo "FAIL: a mismatched .idx/.bin was not refused by name (rc $rc)"; cat "$WORK/c.log"; exit 1; }
[ "$(grep -c "$(basename "$bin")" "$WORK/c.log")" -ge 1 ]
# A shard named explicitly that does not exist.
set +e
run_job "$WORK/corpus.ini" --source.corpus.path="$D/corpus/missing.idx" >"$WORK/d.log" 2>&1
rc=$?
set -e
[ $rc -ne 0 ] && grep -q "source.corpus.path" "$WORK/d.log" || { echo "FAIL: a missing shard was not refused"; cat "$WORK/d.log"; exit 1; }
echo "bad_input: every kind replaced and counted; file-level damage refused before start-up"
