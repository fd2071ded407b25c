#!/usr/bin/env bash
# msd's Parquet reader against two independent implementations, on files made
# afresh: parquet-wasm (arrow-rs's writer) writes 1000 rows of varied
# multilingual text with nulls in every encoding (dictionary, PLAIN,
# DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY), data page version (1, 2) and
# codec (uncompressed, snappy, gzip, zstd), plus repeated values, a required
# column and an image-text file with a struct column; every row msd reads
# must equal what was written and what hyparquet reads (0 mismatched rows).
# Then the other way: files msd's writer makes (msd-datagen --format parquet,
# each codec) must read with hyparquet as msd reads them.
# When node or the npm packages cannot be installed it prints "reference
# unavailable" and exits MSD_SKIP_CODE (ctest: skipped).
set -euo pipefail
: "${MSD_BUILD:?run through ctest}" "${MSD_SOURCE:?run through ctest}"
reference="$MSD_SOURCE/tools/reference"
rows_tool="$MSD_BUILD/tests/parquet_rows"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if ! command -v node >/dev/null 2>&1 || ! "$reference/install.sh" parquet; then
  echo "reference unavailable: skipped"
  exit "${MSD_SKIP_CODE:-77}"
fi

# compare NAME FILE EXPECTED COLUMNS...: msd's rows and hyparquet's against EXPECTED.
failed=0
total_rows=0
compare() {
  local name=$1 file=$2 expected=$3
  shift 3
  TMPDIR="$work" "$rows_tool" "$file" "$@" >"$work/$name.msd"
  node "$reference/parquet_read.mjs" "$file" "$@" >"$work/$name.hyparquet"
  local rows msd_diff hyp_diff
  rows=$(wc -l <"$expected")
  msd_diff=$(diff "$work/$name.msd" "$expected" | grep -c '^<' || true)
  hyp_diff=$(diff "$work/$name.msd" "$work/$name.hyparquet" | grep -c '^<' || true)
  total_rows=$((total_rows + rows))
  if [ "$msd_diff" -ne 0 ] || [ "$hyp_diff" -ne 0 ] || [ "$(wc -l <"$work/$name.msd")" -ne "$rows" ]; then
    echo "FAIL: $name: $msd_diff of $rows rows differ from what was written, $hyp_diff from hyparquet's"
    diff "$work/$name.msd" "$expected" | head -n 4
    failed=1
  fi
}

node "$reference/parquet_write.mjs" --out "$work/wasm" --seed "${MSD_PARQUET_SEED:-20260601}" --rows 1000 \
  --row-group 300 --page-bytes 4096
files=0
for file in "$work"/wasm/*.parquet; do
  name=$(basename "$file" .parquet)
  columns=(text)
  [ "$name" = images ] && columns=(caption image.bytes)
  compare "$name" "$file" "$work/wasm/$name.expected" "${columns[@]}"
  files=$((files + 1))
done
[ "$files" -eq 36 ] || { echo "FAIL: parquet-wasm wrote $files files, expected 36"; failed=1; }
echo "parquet-wasm -> msd, hyparquet: $files files, $total_rows rows compared"

# msd's writer -> hyparquet: the web shards of a tiny dataset in each codec.
for codec in none snappy gz zst; do
  out="$work/datagen-$codec"
  # One bad record: a web record whose text is null (hyparquet decodes invalid UTF-8 lossily, so none of those).
  "$MSD_BUILD/app/msd-datagen" --out "$out" --scale tiny --long-docs 0 --images 0 --indexed-docs 0 --bad-samples 1 \
    --format parquet --compress "$codec" --quiet >/dev/null
  for file in "$out"/web/*.parquet; do
    name="datagen-$codec-$(basename "$file" .parquet)"
    node "$reference/parquet_read.mjs" "$file" text >"$work/$name.expected"
    compare "$name" "$file" "$work/$name.expected" text
  done
done
echo "msd-datagen --format parquet -> hyparquet: every codec compared"
[ "$failed" -eq 0 ] && echo "parquet_reference: 0 mismatched rows"
exit "$failed"
