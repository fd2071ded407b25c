#!/usr/bin/env bash
# msd-replay on the trace of a real msd-run job: verify passes; on a copy with
# one piece's length or one sample's index changed it reports the first
# divergence (step, data group, ranks) and exits 1; on a copy with one stored
# value changed in place (a header's sample count, a sample's cursor) it
# reports tampering with where and exits 4; query and export answer. A file
# that is not a trace (or, for --checkpoint, not a planner checkpoint) is
# named as what it is, status 2, never as tampered with.
source "$(dirname "$0")/common.sh"
REPLAY="$MSD_BUILD/app/msd-replay"
TAMPER="$MSD_BUILD/tests/trace_tamper"
write_tiny_config "$WORK/job.ini"
run_job "$WORK/job.ini" --checkpoint.dir "$WORK/ckpt" >/dev/null
TRACE="$WORK/ckpt/trace.h5"
[ -f "$TRACE" ] || { echo "FAIL: msd-run with --checkpoint.dir wrote no $TRACE"; exit 1; }

out=$("$REPLAY" verify "$TRACE") || { echo "FAIL: verify of the run's own trace: $out"; exit 1; }
echo "$out"
echo "$out" | grep -q "8 steps from step 0 equal" || { echo "FAIL: verify did not check 8 steps"; exit 1; }

"$TAMPER" "$TRACE" "$WORK/piece.h5" 5 piece-length
set +e
out=$("$REPLAY" verify "$WORK/piece.h5")
rc=$?
set -e
echo "$out"
[ "$rc" = 1 ] || { echo "FAIL: verify of a tampered trace exited $rc, expected 1"; exit 1; }
echo "$out" | grep -q "first divergence at step 5" || { echo "FAIL: divergence not reported at step 5"; exit 1; }
echo "$out" | grep -q "data group: [0-9]" || { echo "FAIL: no data group named"; exit 1; }

"$TAMPER" "$TRACE" "$WORK/sample.h5" 2 sample-index
set +e
out=$("$REPLAY" verify "$WORK/sample.h5")
rc=$?
set -e
[ "$rc" = 1 ] && echo "$out" | grep -q "first divergence at step 2" || { echo "FAIL: sample tamper: $out"; exit 1; }

"$TAMPER" "$TRACE" "$WORK/header.h5" 0 raw-source-samples
set +e
out=$("$REPLAY" verify "$WORK/header.h5")
rc=$?
set -e
echo "$out"
[ "$rc" = 4 ] && echo "$out" | grep -q "TAMPERED" && echo "$out" | grep -q "dataset /source_samples" ||
  { echo "FAIL: a header sample count + 1 was not reported as tampering (exit $rc)"; exit 1; }
"$TAMPER" "$TRACE" "$WORK/cursor.h5" 4 raw-sample-cursor
set +e
out=$("$REPLAY" verify "$WORK/cursor.h5")
rc=$?
set -e
[ "$rc" = 4 ] && echo "$out" | grep -q "/samples rows .* (step 4)" ||
  { echo "FAIL: a changed sample cursor was not reported as tampering at step 4 (exit $rc): $out"; exit 1; }
# The run's data is present: verify checked its fingerprint.
"$REPLAY" verify "$TRACE" | grep -q "data files and vocabulary match" || { echo "FAIL: verify did not check the data"; exit 1; }

# dp 2 x tp 1: client 1 is data group 1.
"$REPLAY" query "$TRACE" --rank 1 --step 3 | grep -q "data group 1" || { echo "FAIL: query --rank"; exit 1; }
[ "$("$REPLAY" query "$TRACE" --mix | wc -l)" = $((1 + 8 * 4)) ] || { echo "FAIL: query --mix rows"; exit 1; }
"$REPLAY" query "$TRACE" --balance | tail -1 | grep -q "^# 8 steps" || { echo "FAIL: query --balance"; exit 1; }
"$REPLAY" export "$TRACE" --format csv --out "$WORK/pieces.csv"
"$REPLAY" export "$TRACE" --format json --out "$WORK/pieces.json"
rows=$(($(wc -l <"$WORK/pieces.csv") - 1))
objects=$(grep -c '^{' "$WORK/pieces.json")
[ "$rows" -gt 0 ] && [ "$rows" = "$objects" ] || { echo "FAIL: export: $rows CSV rows, $objects JSON objects"; exit 1; }
echo "replay: verify passes on the run's trace, finds both tampered steps; $rows pieces exported"

# Files of another kind: status 2, each named as what it is.
run_job "$WORK/job.ini" --checkpoint.dir "$WORK/parts" --checkpoint.planner_every=4 --checkpoint.loader_every=4 >/dev/null
"$TAMPER" "$TRACE" "$WORK/foreign.h5" 0 foreign
echo "not even HDF5" >"$WORK/text.h5"
wrong_kind() {
  local pattern=$1 rc=0
  shift
  "$REPLAY" "$@" >"$WORK/kind.out" 2>&1 || rc=$?
  [ $rc = 2 ] && grep -qE -- "$pattern" "$WORK/kind.out" && ! grep -q TAMPERED "$WORK/kind.out" ||
    { echo "FAIL: msd-replay $*: exit $rc, expected 2 and '$pattern'"; cat "$WORK/kind.out"; exit 1; }
  echo "replay: $(cat "$WORK/kind.out")"
}
wrong_kind "TRACE: $WORK/foreign.h5 is an HDF5 file that msd did not write .*, not an msd trace" verify "$WORK/foreign.h5"
wrong_kind "TRACE: $WORK/text.h5 is not an HDF5 file, not an msd trace" verify "$WORK/text.h5"
wrong_kind "TRACE: .*planner-000000000004.h5 is an msd planner checkpoint, not an msd trace" \
  query "$WORK/parts/planner-000000000004.h5" --mix
wrong_kind "--checkpoint: .*loaders-000000000004-00000.h5 is a part of an msd loader checkpoint, not an msd planner checkpoint" \
  verify "$TRACE" --checkpoint "$WORK/parts/loaders-000000000004-00000.h5"
wrong_kind "--checkpoint: cannot open $WORK/missing.h5: No such file or directory" verify "$TRACE" --checkpoint "$WORK/missing.h5"
echo "replay: files of another kind named as such, status 2"
