#!/usr/bin/env bash
# Node-aware layout: a job run as if on two nodes (topology.ranks_per_node)
# places every rank where `msd-run --print-layout` says, and delivers the same
# batch stream as the one-node layout (the stream follows data-group
# coordinates, not world ranks).
source "$(dirname "$0")/common.sh"
write_tiny_config "$WORK/job.ini"
# The one-node layout's stream for these axes.
run_job "$WORK/job.ini" --topology.dp=2 --topology.tp=2 --summary-json "$WORK/ref.json" >/dev/null
ref=$(json_field "$WORK/ref.json" batch_digest)
[ -n "$ref" ] || { echo "FAIL: no digest"; exit 1; }
for placement in per_node first dedicated_nodes; do
  # 2 DP x 2 TP clients; nodes of 3 ranks; 2 loaders (dedicated: the planner
  # and loaders fill node 0).
  args=(--topology.dp=2 --topology.tp=2 --topology.ranks_per_node=3 --topology.data_ranks=$placement)
  "$MSD_RUN" --config "$WORK/job.ini" "${args[@]}" --print-layout >"$WORK/planned.txt"
  grep -q "nodes 3, data_ranks $placement" "$WORK/planned.txt" || { cat "$WORK/planned.txt"; echo "FAIL: header"; exit 1; }
  run_job "$WORK/job.ini" "${args[@]}" --summary-json "$WORK/$placement.json" --output.log_level=debug \
    2>"$WORK/log.txt" >/dev/null
  grep -v '^#' "$WORK/planned.txt" | sort -n >"$WORK/want.txt"
  grep -o 'layout: .*' "$WORK/log.txt" | sed 's/^layout: //' | sort -n >"$WORK/got.txt"
  if ! diff "$WORK/want.txt" "$WORK/got.txt"; then
    echo "FAIL: $placement: the running job's layout differs from --print-layout (above)"
    exit 1
  fi
  got=$(json_field "$WORK/$placement.json" batch_digest)
  [ "$ref" = "$got" ] || { echo "FAIL: $placement: batch_digest $got, one node $ref"; exit 1; }
done
# A placement that cannot be honoured stops before any work, naming the option.
if "$MSD_RUN" --config "$WORK/job.ini" --topology.ranks_per_node=4 --topology.data_ranks=dedicated_nodes \
  --print-layout 2>"$WORK/err.txt"; then
  echo "FAIL: dedicated_nodes with 3 data ranks on nodes of 4 was accepted"
  exit 1
fi
grep -q "topology.data_ranks" "$WORK/err.txt" || { cat "$WORK/err.txt"; echo "FAIL: message"; exit 1; }
echo "layout: per_node, first and dedicated_nodes place ranks as --print-layout says; digest $ref as on one node"
