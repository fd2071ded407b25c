#!/usr/bin/env bash
# Bad configuration fails before any work with a message naming the option.
source "$(dirname "$0")/common.sh"
expect_error() {
  local pattern=$1
  shift
  set +e
  "$@" >"$WORK/out" 2>&1
  local rc=$?
  set -e
  if [ $rc -eq 0 ] || ! grep -q -- "$pattern" "$WORK/out"; then
    echo "FAIL: expected an error matching '$pattern' from: $*"
    cat "$WORK/out"
    exit 1
  fi
}
write_tiny_config "$WORK/job.ini"
expect_error "job.seqlen" "$MSD_RUN" --config "$WORK/job.ini" --job.seqlen=10
expect_error "job.seq_len" "$MSD_RUN" --config "$WORK/job.ini" --job.seq_len=abc
expect_error "topology.dp" "$MSD_RUN" --config "$WORK/job.ini" --topology.dp=0
expect_error "job.micro_batch_shape: varlen needs topology.cp = 1" "$MSD_RUN" --config "$WORK/job.ini" --job.micro_batch_shape=varlen --topology.cp=2
expect_error "job.micro_batch_shape" "$MSD_RUN" --config "$WORK/job.ini" --job.micro_batch_shape=thd
# msd's placement options: variable-length rows and an msd mode.
expect_error "job.cuts: balance places variable-length rows" "$MSD_RUN" --config "$WORK/job.ini" --job.cuts=balance
expect_error "job.micro_batch_count: variable places variable-length rows" "$MSD_RUN" --config "$WORK/job.ini" \
  --job.micro_batch_count=variable
expect_error "job.micro_batch_count: variable is msd's placement" "$MSD_RUN" --config "$WORK/job.ini" \
  --job.micro_batch_count=variable --job.micro_batch_shape=varlen --job.mode=colocated_tokens
expect_error "job.hold_above: the outlier hold is msd's placement" "$MSD_RUN" --config "$WORK/job.ini" \
  --job.hold_above=0.5 --job.mode=colocated
expect_error "job.hold_above" "$MSD_RUN" --config "$WORK/job.ini" --job.hold_above=-1
expect_error "job.hold_steps: 0 holds nothing" "$MSD_RUN" --config "$WORK/job.ini" --job.hold_above=0.5 --job.hold_steps=0
expect_error "job.cuts" "$MSD_RUN" --config "$WORK/job.ini" --job.cuts=megatron
expect_error "model.cost_micro_batch" "$MSD_RUN" --config "$WORK/job.ini" --model.cost_micro_batch=-3
write_tiny_config "$WORK/unknown.ini" "[source.extra]" "format = jsonl"
expect_error "source.extra" "$MSD_RUN" --config "$WORK/unknown.ini"
# A glob that matches nothing: found by the loaders at start-up, reported once,
# and every rank exits.
expect_error "source.web.path" run_job "$WORK/job.ini" --source.web.path=/nonexistent/*.jsonl
"$MSD_RUN" --help >"$WORK/help"
grep -q -- "--print-world-size" "$WORK/help" || { echo "FAIL: --help"; exit 1; }
echo "config_errors: every bad option named"
