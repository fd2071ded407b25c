#!/usr/bin/env bash
# lib/'s parts include each other in one direction only, as docs/design.md's
# layer diagram shows ("Code layout"). The checker is first shown to catch a
# circle in a scratch tree of three parts, and each wrong claim of a scratch
# design.md.
set -euo pipefail
: "${MSD_SOURCE:?run through ctest}" "${MSD_BUILD:?run through ctest}"
check="$MSD_SOURCE/tools/check-part-graph.py"
scratch="$MSD_BUILD/test-scratch/part_graph"
rm -rf "$scratch" && mkdir -p "$scratch/lib/a" "$scratch/lib/b" "$scratch/lib/c"
echo '#include "b/b.h"' >"$scratch/lib/a/a.h"
echo '#include "c/c.h"' >"$scratch/lib/b/b.h"
echo '#include "a/a.h"' >"$scratch/lib/c/c.h"
if out=$(/usr/bin/python3 "$check" "$scratch"); then
  echo "the checker passed a circle: $out" >&2
  exit 1
fi
echo "$out"
grep -q "a circle among lib/'s parts: a -> b -> c -> a" <<<"$out"
# docs/design.md's claims are checked: a part on no row, an arrow that does
# not point down, a part including msd/config.h that may not, and a name in
# that list that is no part all fail.
claims="$MSD_BUILD/test-scratch/part_graph_claims"
rm -rf "$claims" && mkdir -p "$claims/lib/low" "$claims/lib/high" "$claims/lib/loose" "$claims/include/msd" "$claims/docs"
touch "$claims/include/msd/config.h"
printf '#include "msd/config.h"\n#include "low/low.h"\n' >"$claims/lib/high/high.h"
echo '#include "high/high.h"' >"$claims/lib/loose/loose.h"
echo '// the lowest' >"$claims/lib/low/low.h"
design() {  # design ROWS... (one row per argument, highest first), then the parts that may include config.h
  { echo 'Dependencies point one way:'; echo '```'; for row in "$@"; do echo "  $row"; echo '  ───'; done; echo '```'
    echo "Parts that may include \`msd/config.h\` (the whole \`Config\`): $CONFIG_PARTS"; } >"$claims/docs/design.md"
}
CONFIG_PARTS='`high`' design "loose" "high" "low"
/usr/bin/python3 "$check" "$claims" >/dev/null || { echo "the checker refused a true design.md" >&2; exit 1; }
# refused WHAT EXPECTED: the checker must fail on the scratch design.md and
# say EXPECTED (WHAT names the wrong claim).
refused() {
  local out
  out=$(/usr/bin/python3 "$check" "$claims") && { echo "the checker passed $1" >&2; exit 1; }
  grep -q "$2" <<<"$out" || { echo "the checker refused $1 without saying '$2': $out" >&2; exit 1; }
}
CONFIG_PARTS='`high`' design "high" "low"
refused "a part with no row" "part loose has no row"
CONFIG_PARTS='`high`' design "loose" "low" "high"
refused "an arrow up" "high includes low, which is not on a row below it"
CONFIG_PARTS='`low`' design "loose" "high" "low"
refused "a part that may not include msd/config.h" "high includes msd/config.h, but is not among the parts that may"
CONFIG_PARTS='`high`, `gone`' design "loose" "high" "low"
refused "a list naming no part" "name gone, which is no part of lib/"
# A part that may include it and does not is only noted: the list can shrink.
CONFIG_PARTS='`high` and `low`' design "loose" "high" "low"
out=$(/usr/bin/python3 "$check" "$claims") || { echo "the checker refused a list that may shrink: $out" >&2; exit 1; }
grep -q "low may include msd/config.h and does not include it itself" <<<"$out"
/usr/bin/python3 "$check" "$MSD_SOURCE"
