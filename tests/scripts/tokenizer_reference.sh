#!/usr/bin/env bash
# msd-tokenize against the reference (tiktoken's npm package): the same ids for
# varied random multilingual text with cl100k_base, o200k_base, r50k_base, the
# committed small vocabulary under three patterns, and a vocabulary
# msd-train-bpe learns here. Also: --decode inverts encoding, and a line of
# invalid UTF-8 is reported by number without stopping the others.
# When node or the npm packages cannot be installed it prints "reference
# unavailable" and exits MSD_SKIP_CODE (ctest: skipped) if the checks that need
# no reference passed.
set -euo pipefail
: "${MSD_BUILD:?run through ctest}" "${MSD_SOURCE:?run through ctest}"
tokenize="$MSD_BUILD/app/msd-tokenize"
train="$MSD_BUILD/app/msd-train-bpe"
reference="$MSD_SOURCE/tools/reference"
small="$MSD_SOURCE/tests/data/tokenizer/small.tiktoken"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0

# --- invalid UTF-8: reported with its line number, the other lines go on -------
printf 'good line\nbad \xC3\x28 line\nlast\n' >"$work/mixed.txt"
status=0
"$tokenize" --vocab "$small" <"$work/mixed.txt" >"$work/mixed.ids" 2>"$work/mixed.err" || status=$?
if [ "$status" -ne 1 ] || ! grep -q "line 2" "$work/mixed.err" || [ "$(sed -n 2p "$work/mixed.ids")" != "" ] ||
   [ "$(wc -l <"$work/mixed.ids")" -ne 3 ] || [ -z "$(sed -n 3p "$work/mixed.ids")" ]; then
  echo "FAIL: invalid UTF-8 handling (exit $status)"; cat "$work/mixed.err"; cat "$work/mixed.ids"
  failed=1
fi

# --- the reference ------------------------------------------------------------
if ! command -v node >/dev/null 2>&1 || ! "$reference/install.sh"; then
  echo "reference unavailable: skipped"
  [ "$failed" -ne 0 ] && exit 1
  exit "${MSD_SKIP_CODE:-77}"
fi
bundled="${MSD_REFERENCE_DIR:-$MSD_SOURCE/.cache/node}/node_modules/gpt-tokenizer/data"

node "$reference/gen_text.mjs" --seed 1234 --lines 2000 >"$work/text.txt"

# compare NAME VOCAB PATTERN: ids of every line of text.txt, ours vs reference.
compare() {
  local name=$1 vocab=$2 pattern=$3
  node "$reference/encode.mjs" --vocab "$vocab" --pattern "$pattern" --input "$work/text.txt" >"$work/$name.ref"
  "$tokenize" --vocab "$vocab" --pattern "$pattern" <"$work/text.txt" >"$work/$name.ids"
  if cmp -s "$work/$name.ref" "$work/$name.ids"; then
    echo "ok: $name ($(wc -l <"$work/$name.ids") lines)"
  else
    local line
    line=$( (cmp "$work/$name.ref" "$work/$name.ids" || true) | sed -n 's/.* line \([0-9]*\).*/\1/p')
    echo "FAIL: $name differs from the reference, first at line $line"
    echo "  text:      $(sed -n "${line}p" "$work/text.txt" | head -c 400)"
    echo "  reference: $(sed -n "${line}p" "$work/$name.ref" | head -c 400)"
    echo "  msd:       $(sed -n "${line}p" "$work/$name.ids" | head -c 400)"
    failed=1
  fi
}

compare cl100k "$bundled/cl100k_base.tiktoken" cl100k
compare o200k "$bundled/o200k_base.tiktoken" o200k
compare r50k "$bundled/r50k_base.tiktoken" r50k
compare small_cl100k "$small" cl100k
compare small_o200k "$small" o200k
compare small_gpt2 "$small" gpt2
"$train" --corpus "$work/text.txt" --vocab-size 3000 --pattern o200k --out "$work/trained.tiktoken" 2>/dev/null
compare trained_o200k "$work/trained.tiktoken" o200k
compare trained_cl100k "$work/trained.tiktoken" cl100k

# --- decode inverts encode ------------------------------------------------------
"$tokenize" --vocab "$bundled/o200k_base.tiktoken" --pattern o200k --decode <"$work/o200k.ids" >"$work/decoded.txt"
if cmp -s "$work/decoded.txt" "$work/text.txt"; then
  echo "ok: --decode restores the text"
else
  echo "FAIL: --decode does not restore the text"
  failed=1
fi
exit "$failed"
