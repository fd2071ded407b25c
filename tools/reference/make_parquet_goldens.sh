#!/usr/bin/env bash
# Regenerates the Parquet test data under tests/data/parquet/: small files
# parquet-wasm writes in every encoding, data page version and codec msd
# reads (parquet_write.mjs), each with FILE.rows, its rows as hyparquet reads
# them (parquet_read.mjs), which must equal what was written. The unit tests
# (tests/unit/source/test_parquet.cc) compare msd's reader with FILE.rows;
# tests/scripts/parquet_reference.sh does the same on larger files made
# afresh on each run.
# Usage: tools/reference/make_parquet_goldens.sh
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
data="$root/tests/data/parquet"
"$root/tools/reference/install.sh" parquet
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
node "$root/tools/reference/parquet_write.mjs" --out "$work" --seed 41 --rows 40 --row-group 16 --page-bytes 200 \
  --max-chars 32
rm -rf "$data"
mkdir -p "$data"
for file in "$work"/*.parquet; do
  name=$(basename "$file" .parquet)
  columns=(text)
  [ "$name" = images ] && columns=(caption image.bytes)
  node "$root/tools/reference/parquet_read.mjs" "$file" "${columns[@]}" >"$data/$name.rows"
  if ! cmp -s "$data/$name.rows" "$work/$name.expected"; then
    echo "make_parquet_goldens: hyparquet reads $name.parquet otherwise than parquet-wasm wrote it" >&2
    exit 1
  fi
  cp "$file" "$data/"
done
echo "make_parquet_goldens: $(ls "$data"/*.parquet | wc -l) files in $data"
