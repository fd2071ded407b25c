#!/usr/bin/env bash
# Issue 11, reproductions 3 and 4: a loader missing its deadline with no
# shadow left, and a fatal error (fault.kind = crash) on a loader, a client
# or the planner while the other ranks are inside MPI. Each must end the whole
# job soon, with one line naming the rank, its role and the cause, and exit
# status 3 (docs/errors.md) — not wait forever, nor hang in a collective free.
# A source with no good sample is deterministic: status 4, never requeued.
source "$(dirname "$0")/common.sh"
write_tiny_config "$WORK/job.ini"
sed -i 's/^steps = 8/steps = 40/' "$WORK/job.ini"
clients=2  # dp 2 x tp 1; world: planner 0, loaders 1-2, clients 3-4

# expect_abort NAME PATTERN ARGS...: runs the job, checks status 3 (or
# $STATUS) and the line: a fatal one, or for a start-up all ranks agreed
# failed ($AGREED=1), msd-run's one error line.
expect_abort() {
  local name=$1 pattern=$2 expected=${STATUS:-3}
  shift 2
  local start rc=0
  start=$(now_s)
  TIMEOUT=60 run_job "${CONFIG:-$WORK/job.ini}" "$@" >"$WORK/$name.out" 2>&1 || rc=$?
  local seconds
  seconds=$(echo "$(now_s) - $start" | bc)
  [ "$rc" != 124 ] || { echo "FAIL: $name: the job hung (timeout's 124 is not an abort)"; tail -20 "$WORK/$name.out"; exit 1; }
  [ "$rc" = "$expected" ] || { echo "FAIL: $name: exit status $rc, expected $expected"; tail -20 "$WORK/$name.out"; exit 1; }
  local line="fatal on world rank [0-9]+: .*"
  [ "${AGREED:-0}" = 0 ] || line="^msd-run: "
  grep -E "$line$pattern" "$WORK/$name.out" | head -1 >"$WORK/$name.line" ||
    { echo "FAIL: $name: no fatal line matching '$pattern'"; tail -20 "$WORK/$name.out"; exit 1; }
  echo "$name: exit status $rc after ${seconds}s (whole run): $(cat "$WORK/$name.line")"
}

expect_abort no_shadow "loader 1 \(world rank 2\) missed its deadline .* no shadow loader is left" \
  --fault.loader=1 --fault.kind=hang --fault.step=3 --loader.deadline_ms=400
expect_abort crash_loader "injected crash" --fault.kind=crash --fault.rank=1 --fault.step=3
expect_abort crash_client "injected crash \(fault.kind = crash\) at step 3" --fault.kind=crash --fault.rank=4 --fault.step=3
expect_abort crash_planner "injected crash \(fault.kind = crash\) at step 3" --fault.kind=crash --fault.rank=0 --fault.step=3
grep -q '^\[loader 0\]' "$WORK/crash_loader.line" || { echo "FAIL: the loader's line does not name its role"; exit 1; }
grep -q '^\[client 1\]' "$WORK/crash_client.line" || { echo "FAIL: the client's line does not name its role"; exit 1; }
grep -q '^\[planner\]' "$WORK/crash_planner.line" || { echo "FAIL: the planner's line does not name its role"; exit 1; }
# Start-up: a loader that does not send its hello (stuck before opening its
# sources, as on a file system that hangs: fault.kind = startup_stall) is
# named by the planner's bound on the hellos; the job ends with status 3.
expect_abort startup_stall \
  "start-up: loader world rank\(s\) 2 sent no hello within job.startup_timeout_s = 3 s" \
  --job.startup_timeout_s=3 --fault.loader=1 --fault.kind=startup_stall --fault.stall_ms=60000
# The end of the job: a client stopped after its last step (fault.kind =
# finish_stall) is named by the planner, which waits job.stall_timeout_s for
# every live rank before the end's collectives.
expect_abort finish_stall "world rank\(s\) 4 \(client\) did not reach the end of the job within job.stall_timeout_s = 2 s" \
  --job.stall_timeout_s=2 --fault.kind=finish_stall --fault.rank=4 --fault.stall_ms=60000
# Sources cannot drift: the shadow (world rank 3, which opens every source)
# runs in a mount namespace of its own where the books folder lacks a file,
# as a node with a stale mount would see it. Start-up refuses the job,
# naming the option, both loaders and the file (status 2: a restart would
# see the same files).
mkdir -p "$WORK/books-less"
cp "$DATA/books/books-0000.jsonl" "$WORK/books-less/"
printf '%s\n' '#!/usr/bin/env bash' \
  "[ \"\$OMPI_COMM_WORLD_RANK\" = 3 ] || exec \"$MSD_RUN\" \"\$@\"" \
  "exec unshare -m --propagation private bash -c 'mount --bind \"$WORK/books-less\" \"$DATA/books\" && exec \"\$0\" \"\$@\"' \"$MSD_RUN\" \"\$@\"" \
  >"$WORK/drift.sh"
chmod +x "$WORK/drift.sh"
write_tiny_config "$WORK/drift.ini" "[topology]" "shadow_loaders = 1"
AGREED=1 STATUS=2 CONFIG="$WORK/drift.ini" MSD_RUN="$WORK/drift.sh" expect_abort source_drift \
  "source.books.path: loader 1 \(world rank 2\) and loader 2 \(world rank 3\) match different files \(2 and 1; only the first sees: .*books-0001.jsonl\)"
write_bad_source_config "$WORK/bad.ini"
STATUS=4 CONFIG="$WORK/bad.ini" expect_abort bad_source "source 'web': none of its 12 samples can be loaded"
echo "fail_fast: no shadow left, crashes on loader, client and planner and a loader stuck at start-up each ended the job with status 3; loaders that see different files with status 2; a source with no good sample with status 4"
