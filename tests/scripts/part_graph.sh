#!/usr/bin/env bash
# lib/'s parts include each other in one direction only (docs/design.md,
# "Code layout"). The checker is first shown to catch a circle in a scratch
# tree of three parts.
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
/usr/bin/python3 "$check" "$MSD_SOURCE"
