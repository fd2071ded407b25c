#!/usr/bin/env bash
# README's option table is the option table of lib/config/config.cc: the
# Markdown msd-run --help-markdown prints from it must appear in README.md
# unchanged, and --help must list every option of that table.
set -euo pipefail
: "${MSD_BUILD:?run through ctest}" "${MSD_SOURCE:?run through ctest}"
run="$MSD_BUILD/app/msd-run"
table=$("$run" --help-markdown)
readme=$(awk '/^\| option \| default \| meaning \|$/ {on = 1} on && !/^\|/ {exit} on' "$MSD_SOURCE/README.md")
if [ "$table" != "$readme" ]; then
  echo "README.md's option table differs from msd-run --help-markdown (< README, > the table):" >&2
  diff <(echo "$readme") <(echo "$table") >&2 || true
  exit 1
fi
help=$("$run" --help)
missing=0
while read -r key; do
  if ! grep -q -- "--$key " <<<"$help"; then
    echo "--help does not list $key" >&2
    missing=1
  fi
done < <(sed -n 's/^| `\([a-zA-Z_.]*\)` |.*/\1/p' <<<"$table")
[ "$missing" -eq 0 ]
echo "README's option table matches ($(grep -c '^| `' <<<"$table") options)"
