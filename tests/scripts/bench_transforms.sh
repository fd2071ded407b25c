#!/usr/bin/env bash
# msd-bench transforms at a tiny size, so the benchmark cannot rot: it runs on
# the fixture dataset and on --text / --images inputs, its JSON has the keys
# the issue names with measured rates, msd's ids equal the reference's when the
# reference is installed (and encode_batch's ids and apply_batch's images over
# two threads equal one thread's),
# and a missing reference is reported, not fatal.
source "$(dirname "$0")/common.sh"
BENCH="$MSD_BUILD/app/msd-bench"
tiny=(--seconds 0 --min-passes 1 --max-text-mb 0.2 --max-images 40 --max-side 64 --patch 16)

fail() {
  echo "FAIL: $1"
  [ -f "${2:-}" ] && cat "$2"
  exit 1
}
# positive FILE KEY: the field is a number above zero.
positive() {
  local value
  value=$(json_field "$1" "$2")
  awk -v v="$value" 'BEGIN { exit !(v + 0 > 0) }' || fail "$2 is '$value', expected a rate above 0" "$1"
}

"$BENCH" --help >"$WORK/help.txt" 2>&1 || true
grep -q "transforms" "$WORK/help.txt" || fail "msd-bench --help does not list transforms"
"$BENCH" nonsense >/dev/null 2>&1 && fail "an unknown subcommand was accepted"
"$BENCH" transforms --data "$DATA" "${tiny[@]}" --threads 0 >/dev/null 2>&1 && fail "--threads 0 was accepted"

# The fixture dataset, JSON output.
"$BENCH" transforms --data "$DATA" "${tiny[@]}" --large-photos 1 --threads 2 --json >"$WORK/bench.json" ||
  fail "msd-bench transforms failed"
for key in tokenizer msd_mb_per_s reference_mb_per_s ratio mismatched_lines jpeg msd_mp_per_s turbojpeg_mp_per_s \
           split decode resize patchify jpeg_large msd_batch_mb_per_s threads msd_batch_mb_per_s_per_thread; do
  grep -q "\"$key\":" "$WORK/bench.json" || fail "no \"$key\" in the JSON report" "$WORK/bench.json"
done
positive "$WORK/bench.json" msd_mb_per_s
positive "$WORK/bench.json" msd_batch_mb_per_s
[ "$(json_field "$WORK/bench.json" threads)" = 2 ] || fail "threads is not 2" "$WORK/bench.json"
[ "$(json_field "$WORK/bench.json" batch_mismatched_documents)" = 0 ] ||
  fail "encode_batch's ids differ from encode's" "$WORK/bench.json"
positive "$WORK/bench.json" msd_mp_per_s
positive "$WORK/bench.json" turbojpeg_mp_per_s
positive "$WORK/bench.json" msd_batch_mp_per_s
[ "$(json_field "$WORK/bench.json" batch_mismatched_images)" = 0 ] ||
  fail "apply_batch's images over two threads differ from apply's" "$WORK/bench.json"
if [ "$(json_field "$WORK/bench.json" reference_mb_per_s)" = null ]; then
  echo "bench_transforms: reference unavailable: $(json_field "$WORK/bench.json" reference_note)"
  [ "$(json_field "$WORK/bench.json" mismatched_lines)" = null ] || fail "mismatches counted without a reference"
else
  positive "$WORK/bench.json" reference_mb_per_s
  [ "$(json_field "$WORK/bench.json" mismatched_lines)" = 0 ] || fail "msd's ids differ from tiktoken's" "$WORK/bench.json"
fi

# Inputs given as files, text output, and a reference that cannot run.
head -c 100000 "$DATA"/books/*.jsonl | head -n 40 | sed 's/^{.*"text":"\([^"]*\)".*$/\1/' >"$WORK/plain.txt"
mkdir "$WORK/jpegs"
tar -xf "$(ls "$DATA"/images/*.tar | head -n 1)" -C "$WORK/jpegs" --wildcards '*.jpg'
"$BENCH" transforms --vocab "$DATA/vocab.tiktoken" --text "$WORK/plain.txt" --images "$WORK/jpegs/*.jpg" \
  --node "$WORK/no-such-node" "${tiny[@]}" --large-photos 0 >"$WORK/bench.txt" || fail "the benchmark failed without node" "$WORK/bench.txt"
grep -q "tiktoken (node)   unavailable" "$WORK/bench.txt" || fail "a missing node is not reported" "$WORK/bench.txt"
grep -q "msd encode_batch .* (1 thread," "$WORK/bench.txt" || fail "no encode_batch rate at the default 1 thread" "$WORK/bench.txt"
grep -q "from $WORK/plain.txt" "$WORK/bench.txt" || fail "--text was not used" "$WORK/bench.txt"
grep -q "images from $WORK/jpegs" "$WORK/bench.txt" || fail "--images was not used" "$WORK/bench.txt"
grep -q "large photos" "$WORK/bench.txt" && fail "--large-photos 0 still measured large photos" "$WORK/bench.txt"
echo "bench_transforms: JSON and text reports complete"
