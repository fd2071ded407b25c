#!/usr/bin/env bash
# Megatron data paths: an indexed source given the .bin/.idx prefix, and
# mix.megatron_blend "W PREFIX W PREFIX", deliver the same batch stream as the
# equivalent explicit sources over the .idx files.
source "$(dirname "$0")/common.sh"
shopt -s nullglob
idx=("$DATA"/corpus/*.idx)
[ "${#idx[@]}" -ge 2 ] || { echo "FAIL: the fixture has ${#idx[@]} corpus shards, the test needs 2"; exit 1; }
a=${idx[0]%.idx}
b=${idx[1]%.idx}
an=$(basename "$a" | tr -c 'A-Za-z0-9_\n-' _)
bn=$(basename "$b" | tr -c 'A-Za-z0-9_\n-' _)
common=(--job.steps=6 --topology.dp=2 --topology.loaders=2 --output.progress_every=0 --output.log_level=warn
  --tokenizer.vocab="$DATA/vocab.tiktoken" --loader.window_mb=8 --job.global_batch=8 --job.seq_len=512 --seed 11)
# 1. Explicit sources over the .idx files.
cat >"$WORK/explicit.ini" <<INI
[mix]
sources = $an, $bn
[source.$an]
format = indexed
path = $a.idx
weight = 0.3
[source.$bn]
format = indexed
path = $b.idx
weight = 0.7
INI
run_job "$WORK/explicit.ini" "${common[@]}" --summary-json "$WORK/explicit.json" >/dev/null
# 2. The same sources given as prefixes.
sed -e "s#path = $a.idx#path = $a#" -e "s#path = $b.idx#path = $b#" "$WORK/explicit.ini" >"$WORK/prefix.ini"
grep -q "path = $a\$" "$WORK/prefix.ini"
run_job "$WORK/prefix.ini" "${common[@]}" --summary-json "$WORK/prefix.json" >/dev/null
# 3. A Megatron --data-path blend, no [source] sections at all.
printf '[mix]\nmegatron_blend = 0.3 %s 0.7 %s\n' "$a" "$b" >"$WORK/blend.ini"
run_job "$WORK/blend.ini" "${common[@]}" --summary-json "$WORK/blend.json" >/dev/null
want=$(json_field "$WORK/explicit.json" batch_digest)
[ -n "$want" ] || { echo "FAIL: no digest"; exit 1; }
for run in prefix blend; do
  got=$(json_field "$WORK/$run.json" batch_digest)
  [ "$got" = "$want" ] || { echo "FAIL: $run: batch_digest $got, explicit .idx sources $want"; exit 1; }
done
# The blend's sources are the prefixes' indexed sources, named after them.
grep -q "\"$an\"" "$WORK/blend.json" || { echo "FAIL: source $an not in the blend's summary"; exit 1; }
# A malformed blend stops before any work, naming the option.
printf '[mix]\nmegatron_blend = 0.3 %s 0.7\n' "$a" >"$WORK/bad.ini"
if "$MSD_RUN" --config "$WORK/bad.ini" "${common[@]}" --print-world-size >/dev/null 2>"$WORK/err.txt"; then
  echo "FAIL: a blend with a weight and no prefix was accepted"
  exit 1
fi
grep -q "mix.megatron_blend" "$WORK/err.txt" || { cat "$WORK/err.txt"; echo "FAIL: message"; exit 1; }
echo "megatron_paths: .idx, prefix and blend give batch_digest $want"
