#!/usr/bin/env bash
# No function in lib/ or app/ is longer than 120 lines (a data table may be
# exempted by a comment, see tools/check-function-length.py). The checker is
# first shown to catch a long function, a long constructor with a brace
# initializer list and a long member function, and to honour the exemption.
set -euo pipefail
: "${MSD_SOURCE:?run through ctest}" "${MSD_BUILD:?run through ctest}"
check="$MSD_SOURCE/tools/check-function-length.py"
scratch="$MSD_BUILD/test-scratch/function_length"
rm -rf "$scratch" && mkdir -p "$scratch"

body() { for i in $(seq "$1"); do echo "  x += $i;  // \"{ not a brace"; done; }
{
  echo "namespace n { struct S { S(); int f(); int x{0}; }; }"
  echo "n::S::S() : x{1} {"; body 125; echo "}"
  echo "int n::S::f() {"; body 125; echo "  return x; }"
  echo "int short_one() { return 1; }"
  echo "// check-function-length: data table"
  echo "int table() {"; body 125; echo "  return 0; }"
} >"$scratch/sample.cc"
out=$("$check" "$scratch/sample.cc" || true)
echo "$out"
grep -q "sample.cc:2: n::S::S is 127 lines" <<<"$out"
grep -q "sample.cc:129: n::S::f is 127 lines" <<<"$out"
! grep -q "table\|short_one" <<<"$out"
if "$check" "$scratch/sample.cc" >/dev/null; then
  echo "the checker passed a file with long functions" >&2
  exit 1
fi

"$check" "$MSD_SOURCE/lib" "$MSD_SOURCE/app"
