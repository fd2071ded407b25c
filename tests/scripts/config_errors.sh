#!/usr/bin/env bash
# Bad configuration fails before any work with exit status 2 and a message
# naming the option: option values (hostile ones too: tests/unit/config's
# option fuzz has the full list), the --config file itself, and what is only
# known on the ranks (the paths the job writes, the loader windows' room in
# node-shared memory) in the pre-flight checks of the job's start.
source "$(dirname "$0")/common.sh"
# expect_error PATTERN COMMAND...: exit status 2 and a line matching PATTERN.
expect_error() {
  local pattern=$1 start rc=0
  shift
  start=$(now_s)
  "$@" >"$WORK/out" 2>&1 || rc=$?
  seconds=$(printf "%.1f" "$(echo "$(now_s) - $start" | bc)")
  if [ $rc -ne 2 ] || ! grep -q -- "$pattern" "$WORK/out"; then
    echo "FAIL: expected exit status 2 (got $rc) and an error matching '$pattern' from: $*"
    cat "$WORK/out"
    exit 1
  fi
}
write_tiny_config "$WORK/job.ini"
expect_error "job.seqlen" "$MSD_RUN" --config "$WORK/job.ini" --job.seqlen=10
expect_error "job.seq_len" "$MSD_RUN" --config "$WORK/job.ini" --job.seq_len=abc
expect_error "topology.dp" "$MSD_RUN" --config "$WORK/job.ini" --topology.dp=0
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

# Hostile values: each refused at once, naming the option.
for case in "model.cost_a=1e308" "emulator.time_scale=1e308" "source.web.read_delay_us=18446744073709551615" \
            "job.steps=18446744073709551615" "tokenizer.eod_token=<eos>" "source.web.weight=1e308" \
            "image.token_id=4294967296" "job.global_batch=4294967295" "model.cost_a=nan"; do
  expect_error "${case%%=*}" "$MSD_RUN" --config "$WORK/job.ini" "--$case"
done
echo "config_errors: the hostile values refused, each naming its option"
# --config: a regular file of bounded size.
mkdir -p "$WORK/dir.ini"
expect_error "--config: '$WORK/dir.ini' is a directory" "$MSD_RUN" --config "$WORK/dir.ini"
expect_error "--config: '/dev/zero' is not a regular file" timeout 10 "$MSD_RUN" --config /dev/zero
head -c 2000000 /dev/zero | tr '\0' '#' >"$WORK/big.ini"
expect_error "--config: '$WORK/big.ini' is larger than 1 MiB" "$MSD_RUN" --config "$WORK/big.ini"
echo "config_errors: --config /dev/zero, a directory and a 2 MB file refused in ${seconds}s at most"

# A glob that matches nothing: found by the loaders at start-up, reported once,
# and every rank exits.
expect_error "source.web.path" run_job "$WORK/job.ini" --source.web.path=/nonexistent/*.jsonl

# Pre-flight, on the ranks before any work: nothing is written, no step runs.
preflight() {
  local pattern=$1
  shift
  expect_error "$pattern" run_job "$WORK/job.ini" --output.progress_every=1 --output.log_level=info "$@"
  ! grep -q "step 1/" "$WORK/out" || { echo "FAIL: a step ran before the pre-flight error '$pattern'"; cat "$WORK/out"; exit 1; }
  echo "config_errors: pre-flight refused in ${seconds}s (whole run): $(grep -m1 -- "$pattern" "$WORK/out" | cut -c1-200)"
}
preflight "output.summary_json: cannot write '$WORK/missing/summary.json': its directory '$WORK/missing' does not exist" \
  --summary-json "$WORK/missing/summary.json"
preflight "output.summary_json: '$WORK/dir.ini' is a directory" --summary-json "$WORK/dir.ini"
preflight "output.metrics: cannot write '$WORK/missing/m.jsonl'" --metrics "$WORK/missing/m.jsonl"
preflight "checkpoint.dir: cannot create '$WORK/job.ini/ckpt'" --checkpoint.dir="$WORK/job.ini/ckpt"
# Two loaders' windows of 16 GiB each on this node: more than /dev/shm holds
# (this check needs /dev/shm under 32 GiB free).
shm_mib=$(($(df -k --output=avail /dev/shm | tail -1) / 1024))
if [ "$shm_mib" -lt 32768 ]; then
  preflight "loader.window_mb: the loader windows of this node need 32768 MiB (2 loader(s) x 16384 MiB) of node-shared memory, and /dev/shm has" \
    --loader.window_mb=16384
else
  echo "config_errors: skipped the windows' room: /dev/shm has $shm_mib MiB free (32 GiB or more)"
fi

"$MSD_RUN" --help >"$WORK/help"
grep -q -- "--print-world-size" "$WORK/help" || { echo "FAIL: --help"; exit 1; }
echo "config_errors: every bad option named"
