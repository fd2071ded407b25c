#!/usr/bin/env bash
# msd's per-document CP sharding end to end: variable-length rows with msd's
# cuts, variable micro-batch counts and the outlier hold on pp 2 x cp 2 x tp 2
# (every document piece split zigzag over the CP ranks on its own,
# Transformer Engine's THD layout). msd reads exactly the sample bytes the
# batches use; TP sharing and the loader count leave the batches unchanged;
# the CP split changes them from cp 1's; the rows cost per piece under CP.
# (tests/mpi/test_protocol.cc `thd` checks every CP rank's tokens against the
# whole row.)
source "$(dirname "$0")/common.sh"
write_tiny_config "$WORK/job.ini"
placement=(--job.micro_batch_shape=varlen --job.cuts=balance --job.micro_batch_count=variable --job.hold_above=0.5
  --job.steps=6)
hybrid=(--topology.dp=2 --topology.pp=2 --topology.cp=2 --topology.tp=2)
run_job "$WORK/job.ini" "${placement[@]}" "${hybrid[@]}" --summary-json "$WORK/thd.json" >"$WORK/thd.log" 2>&1 ||
  { cat "$WORK/thd.log"; exit 1; }
run_job "$WORK/job.ini" "${placement[@]}" "${hybrid[@]}" --topology.broadcast_at=none --loaders 1 \
  --summary-json "$WORK/none.json" >"$WORK/none.log" 2>&1 || { cat "$WORK/none.log"; exit 1; }
run_job "$WORK/job.ini" "${placement[@]}" --topology.dp=2 --topology.pp=2 --topology.tp=2 \
  --summary-json "$WORK/cp1.json" >"$WORK/cp1.log" 2>&1 || { cat "$WORK/cp1.log"; exit 1; }
needed=$(json_field "$WORK/thd.json" bytes_needed_total)
[ "$needed" -gt 0 ] || { echo "FAIL: no bytes needed"; exit 1; }
[ "$(json_field "$WORK/thd.json" bytes_fetched_total)" = "$needed" ] ||
  { echo "FAIL: msd fetched other bytes than the THD slices use"; exit 1; }
[ "$(json_field "$WORK/none.json" bytes_fetched_total)" = "$((2 * needed))" ] ||
  { echo "FAIL: without TP sharing each of the 2 TP ranks should read the bytes once"; exit 1; }
thd=$(json_field "$WORK/thd.json" batch_digest)
[ -n "$thd" ] && [ "$thd" = "$(json_field "$WORK/none.json" batch_digest)" ] ||
  { echo "FAIL: TP sharing or the loader count changed the THD batches"; exit 1; }
[ "$thd" != "$(json_field "$WORK/cp1.json" batch_digest)" ] || { echo "FAIL: cp 2 gives cp 1's batches"; exit 1; }
[ "$(json_field "$WORK/thd.json" steps)" = 6 ] && [ "$(json_field "$WORK/cp1.json" steps)" = 6 ] ||
  { echo "FAIL: steps"; exit 1; }
grep -q '"micro_batch_shape":"varlen"' "$WORK/thd.json" || { echo "FAIL: the summary does not say varlen"; exit 1; }
# The planner places THD rows under CP through msd-plan simulate --compare too.
"$MSD_BUILD/app/msd-plan" simulate --compare --dp 4 --tp 1 --cp 2 --seq-len 4096 --samples-per-gpu 8 --steps 4 \
  --micro-batches 1 --micro-batch-shape varlen --cuts balance --micro-batch-count variable --cost-model analytic \
  --json >"$WORK/compare.json" || { echo "FAIL: msd-plan simulate --compare with THD rows under CP"; exit 1; }
/usr/bin/python3 - "$WORK/compare.json" <<'PY' || exit 1
import json, sys
report = json.load(open(sys.argv[1]))
modes = report["modes"]
msd = modes["msd_greedy"]
assert msd["rows"] == "varlen", msd
assert msd["positions"] == modes["megatron_dynamic_cp"]["positions"] == modes["megatron_docmask"]["positions"]
assert msd["steps"] == modes["megatron_docmask"]["steps"] == modes["megatron_dynamic_cp"]["steps"]
assert 0 < msd["padding_fraction"] < 0.1, msd["padding_fraction"]
PY
echo "thd_delivery: batch_digest $thd (cp 2, THD rows), fetch redundancy 1"
