#!/usr/bin/env bash
# examples/train_gpt.py trains: on the tiny dataset's text, with a fixed seed,
# the small GPT's loss falls over a few dozen steps (a loose bound), and
# msd-run on the same configuration delivers the same batch_digest.
source "$(dirname "$0")/common.sh"
steps=30
write_tiny_config "$WORK/job.ini"
# Short text only (web pages, the indexed corpus), one loader, 4 documents of
# 128-token sequences per step: quick on a shared CPU.
sed -i -e "s/^loaders = .*/loaders = 1/" -e "s/^seq_len = .*/seq_len = 128/" -e "s/^micro_batches = .*/micro_batches = 1/" \
  -e "s/^global_batch = .*/global_batch = 4/" -e "s/^sources = .*/sources = web, corpus/" \
  -e "s/^schedule = .*/schedule = constant/" -e "s/^weight = 0:0.6, 8:0.2/weight = 0.6/" \
  -e "/^\[source.images\]/,/^$/d" -e "/^\[source.books\]/,/^$/d" "$WORK/job.ini"
export PYTHONPATH="$MSD_BUILD/python" OMP_NUM_THREADS=1
n=$("$MSD_RUN" --config "$WORK/job.ini" --print-world-size)
# shellcheck disable=SC2086
timeout 500 $MSD_MPIEXEC -n "$n" /usr/bin/python3 -m mpi4py "$MSD_SOURCE/examples/train_gpt.py" --config "$WORK/job.ini" \
  --steps $steps --vocab 2049 --max-position 128 --summary-json "$WORK/train.json"
run_job "$WORK/job.ini" --steps $steps --summary-json "$WORK/run.json" >/dev/null
/usr/bin/python3 - "$WORK/train.json" "$WORK/run.json" <<'PY'
import json, sys
train, run = (json.load(open(p)) for p in sys.argv[1:3])
first = sum(train["losses"][:3]) / 3   # a few steps each: one step's loss is noisy
last = sum(train["losses"][-3:]) / 3
print(f"loss {train['loss_first']:.3f} -> {train['loss_last']:.3f} (first 3 steps {first:.3f}, last 3 {last:.3f}); "
      f"batch digest {train['batch_digest']} (msd-run {run['batch_digest']})")
assert train["steps"] == 30, train["steps"]
assert train["batch_digest"] == run["batch_digest"], "msd-run delivers other batches than the Python job"
assert last < first - 0.5, "the loss did not fall"
PY

# Variable-length micro-batches: the same model trains on one row per
# micro-batch (shapes change from one micro-batch to the next), and msd-run
# delivers the same batches.
timeout 300 $MSD_MPIEXEC -n "$n" /usr/bin/python3 -m mpi4py "$MSD_SOURCE/examples/train_gpt.py" --config "$WORK/job.ini" \
  --steps 10 --vocab 2049 --max-position 128 --summary-json "$WORK/varlen.json" --job.micro_batch_shape=varlen
run_job "$WORK/job.ini" --steps 10 --summary-json "$WORK/run-varlen.json" --job.micro_batch_shape=varlen >/dev/null
/usr/bin/python3 - "$WORK/varlen.json" "$WORK/run-varlen.json" "$WORK/train.json" <<'PY'
import json, math, sys
train, run, fixed = (json.load(open(p)) for p in sys.argv[1:4])
print(f"varlen: loss {train['loss_first']:.3f} -> {train['loss_last']:.3f}; batch digest {train['batch_digest']}")
assert train["steps"] == 10 and all(math.isfinite(x) for x in train["losses"]), train
assert train["batch_digest"] == run["batch_digest"], "msd-run delivers other varlen batches than the Python job"
assert train["batch_digest"] != fixed["batch_digest"]
PY

# msd's placement options (cut-aware cuts, variable micro-batch counts, the
# outlier hold): the model trains on micro-batches whose count differs
# between ranks, normalizing its loss by the batch's global_loss_tokens
# (train_gpt checks it against the ranks' own counts every step).
new=(--job.micro_batch_shape=varlen --job.cuts=balance --job.micro_batch_count=variable --job.hold_above=0.5)
timeout 300 $MSD_MPIEXEC -n "$n" /usr/bin/python3 -m mpi4py "$MSD_SOURCE/examples/train_gpt.py" --config "$WORK/job.ini" \
  --steps 8 --vocab 2049 --max-position 128 --summary-json "$WORK/new.json" "${new[@]}"
run_job "$WORK/job.ini" --steps 8 --summary-json "$WORK/run-new.json" "${new[@]}" >/dev/null
/usr/bin/python3 - "$WORK/new.json" "$WORK/run-new.json" <<'PY'
import json, math, sys
train, run = (json.load(open(p)) for p in sys.argv[1:3])
print(f"cuts, variable micro-batches, hold: loss {train['loss_first']:.3f} -> {train['loss_last']:.3f}; "
      f"{train['placement']['hold']['held']} documents held")
assert train["steps"] == 8 and all(math.isfinite(x) for x in train["losses"]), train
assert train["batch_digest"] == run["batch_digest"], "msd-run delivers other batches than the Python job"
PY
