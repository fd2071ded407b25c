#!/usr/bin/env bash
# The batch stream is a pure function of (configuration, seed, step): two runs
# agree, and so do runs with a different number of loaders.
source "$(dirname "$0")/common.sh"
write_tiny_config "$WORK/job.ini"
run_job "$WORK/job.ini" --summary-json "$WORK/a.json" >/dev/null
run_job "$WORK/job.ini" --summary-json "$WORK/b.json" >/dev/null
run_job "$WORK/job.ini" --summary-json "$WORK/c.json" --loaders 1 >/dev/null
run_job "$WORK/job.ini" --summary-json "$WORK/d.json" --loaders 4 >/dev/null
# Loaders reading and transforming batches of requests on two threads, and
# on four with a storage latency on every read (reads finish out of order).
run_job "$WORK/job.ini" --summary-json "$WORK/t.json" --loader.threads=2 >/dev/null
run_job "$WORK/job.ini" --summary-json "$WORK/u.json" --loader.threads=4 --source.images.read_delay_us=300 \
  --source.web.read_delay_us=50 >/dev/null
a=$(json_field "$WORK/a.json" batch_digest)
for run in b c d t u; do
  other=$(json_field "$WORK/$run.json" batch_digest)
  if [ "$a" != "$other" ] || [ -z "$a" ]; then
    echo "FAIL: batch_digest differs: run a $a, run $run $other"
    exit 1
  fi
done
steps=$(json_field "$WORK/a.json" steps)
[ "$steps" = 8 ] || { echo "FAIL: steps = $steps"; exit 1; }
# A different seed must change the stream (the digest is not a constant).
run_job "$WORK/job.ini" --summary-json "$WORK/e.json" --seed 6 >/dev/null
[ "$(json_field "$WORK/e.json" batch_digest)" != "$a" ] || { echo "FAIL: seed does not change the digest"; exit 1; }
# Variable-length micro-batches: as deterministic, a layout of its own.
run_job "$WORK/job.ini" --summary-json "$WORK/v1.json" --loaders 1 --job.micro_batch_shape=varlen >/dev/null
run_job "$WORK/job.ini" --summary-json "$WORK/v4.json" --loaders 4 --job.micro_batch_shape=varlen >/dev/null
v=$(json_field "$WORK/v1.json" batch_digest)
[ -n "$v" ] && [ "$v" = "$(json_field "$WORK/v4.json" batch_digest)" ] || { echo "FAIL: varlen digests differ"; exit 1; }
[ "$v" != "$a" ] || { echo "FAIL: varlen rows give the fixed rows' digest"; exit 1; }
echo "determinism: batch_digest $a across 2 runs, 1, 2, 4 loaders and 2 and 4 loader threads; varlen $v with 1 and 4 loaders"
