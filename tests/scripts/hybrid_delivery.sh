#!/usr/bin/env bash
# Hybrid-parallel delivery end to end on pp 2 x cp 2 x tp 2: msd reads exactly
# the sample bytes the batches use (fetch redundancy 1); with
# topology.broadcast_at = none every TP rank reads for itself (redundancy tp)
# and the batches do not change; the colocated baseline reads more than it
# uses; the summary reports loader memory per role; seq_len must split into
# 2 x cp chunks.
source "$(dirname "$0")/common.sh"
write_tiny_config "$WORK/job.ini"
hybrid=(--topology.dp=1 --topology.pp=2 --topology.cp=2 --topology.tp=2 --job.steps=4)
run_job "$WORK/job.ini" "${hybrid[@]}" --summary-json "$WORK/tp.json" >"$WORK/tp.log" 2>&1 ||
  { cat "$WORK/tp.log"; exit 1; }
run_job "$WORK/job.ini" "${hybrid[@]}" --topology.broadcast_at=none --summary-json "$WORK/none.json" >"$WORK/none.log" 2>&1 ||
  { cat "$WORK/none.log"; exit 1; }
run_job "$WORK/job.ini" "${hybrid[@]}" --mode=colocated --summary-json "$WORK/colocated.json" >"$WORK/colocated.log" 2>&1 ||
  { cat "$WORK/colocated.log"; exit 1; }
for f in tp none colocated; do
  echo "$f: fetch_redundancy $(json_field "$WORK/$f.json" fetch_redundancy)," \
       "fetched $(json_field "$WORK/$f.json" bytes_fetched_total), needed $(json_field "$WORK/$f.json" bytes_needed_total)"
  for key in loader_memory_bytes loader_rank_memory_bytes bytes_fetched bytes_needed; do
    grep -q "\"$key\"" "$WORK/$f.json" || { echo "FAIL: no $key in the $f summary"; exit 1; }
  done
done
grep -q '"loader_memory_bytes":{"planner":[0-9]*,"loader":[0-9]*,"client":[0-9]*,"total":[1-9]' "$WORK/tp.json" ||
  { echo "FAIL: loader_memory_bytes lacks a role or is empty"; exit 1; }
# Each rank's memory from start-up on (no file-backed pages) is never zero,
# and in every role, colocated too, where the clients hold the loader state.
for f in tp colocated; do
  grep -q '"loader_rank_memory_bytes":{"planner":[0-9]*,"loader":[0-9]*,"client":[1-9][0-9]*,"total":[1-9]' "$WORK/$f.json" ||
    { echo "FAIL: loader_rank_memory_bytes lacks a role or is empty in the $f summary"; exit 1; }
done
needed=$(json_field "$WORK/tp.json" bytes_needed_total)
[ "$needed" -gt 0 ] || { echo "FAIL: no bytes needed"; exit 1; }
[ "$(json_field "$WORK/tp.json" bytes_fetched_total)" = "$needed" ] || { echo "FAIL: msd fetched other bytes than it used"; exit 1; }
[ "$(json_field "$WORK/none.json" bytes_fetched_total)" = "$((2 * needed))" ] ||
  { echo "FAIL: without TP sharing each of the 2 TP ranks should read the bytes once"; exit 1; }
[ "$(json_field "$WORK/tp.json" batch_digest)" = "$(json_field "$WORK/none.json" batch_digest)" ] ||
  { echo "FAIL: TP sharing changed the batches"; exit 1; }
awk -v r="$(json_field "$WORK/colocated.json" fetch_redundancy)" 'BEGIN { exit !(r > 2) }' ||
  { echo "FAIL: the colocated baseline should read several times what it uses"; exit 1; }
# seq_len must split into 2 x cp equal chunks.
set +e
"$MSD_RUN" --config "$WORK/job.ini" "${hybrid[@]}" --job.seq_len=510 --print-world-size >"$WORK/err" 2>&1
rc=$?
set -e
[ $rc -ne 0 ] && grep -q "job.seq_len" "$WORK/err" || { echo "FAIL: seq_len not checked against cp"; cat "$WORK/err"; exit 1; }
echo "hybrid_delivery: ok"
