#!/usr/bin/env bash
# One owner per checkpoint directory, and a resume is what it says
# (docs/checkpoint.md "One owner per directory"):
# - a second job on a running job's checkpoint directory, or on its trace
#   only, is refused within 2 s (status 2) naming the owner, and the first
#   job's files are byte-identical before and after; the first job then ends
#   cleanly and its trace verifies;
# - a stale lock (its process gone; not refreshed for 10 minutes) is taken
#   over with a warning; a live one on another host is refused;
# - an existing trace is never truncated in place;
# - --resume over planner checkpoints none of which reads back is refused
#   (status 2) listing each and why; checkpoint.start_over starts at step 0,
#   moving them aside; a start at step 0 over an earlier run's checkpoints is
#   refused.
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/faults_common.sh"
write_slow_job
snapshot() { (cd "$1" && find . -type f ! -name '*.lock' -print0 | sort -z | xargs -0 sha256sum); }

# refused NAME SECONDS PATTERN ARGS...: msd-run exits 2 within SECONDS with a
# line matching PATTERN.
refused() {
  local name=$1 limit=$2 pattern=$3 start rc=0
  shift 3
  start=$(now_s)
  TIMEOUT=60 run_job "$WORK/job.ini" "$@" >"$WORK/$name.out" 2>&1 || rc=$?
  seconds=$(printf "%.1f" "$(echo "$(now_s) - $start" | bc)")
  [ $rc = 2 ] || { echo "FAIL: $name: exit status $rc, expected 2"; tail -20 "$WORK/$name.out"; exit 1; }
  grep -qE -- "$pattern" "$WORK/$name.out" || { echo "FAIL: $name: no line matching '$pattern'"; tail -20 "$WORK/$name.out"; exit 1; }
  within "$name" "$limit"
  echo "checkpoint_owner: $name: refused (status 2) in ${seconds}s: $(grep -m1 -E -- "$pattern" "$WORK/$name.out" | cut -c1-220)"
}

# Job A runs; its ranks are stopped while B tries, so that its files hold still.
# 20 steps: 12 slow steps after the checkpoint of step 8 are time enough to
# stop it, fewer to wait for once it continues.
timeout 120 $MSD_MPIEXEC -n "$n" "$MSD_RUN" --config "$WORK/job.ini" --checkpoint.dir="$WORK/a" "${ckpt[@]}" \
  --job.steps=20 --summary-json "$WORK/a.json" >"$WORK/a.out" 2>&1 &
job_a=$!
wait_until 60 "job A's planner checkpoint of step 8" test -e "$WORK/a/planner-000000000008.h5"
pids=()
for rank in $(seq 0 $((n - 1))); do
  wait_until 10 "job A's world rank $rank" found_rank_pid "checkpoint.dir=$WORK/a" "$rank"
  pids+=("$pid")
done
kill -STOP "${pids[@]}"
snapshot "$WORK/a" >"$WORK/a.before"
refused same_dir 5 "checkpoint.dir: $WORK/a/msd.lock is held by another job \(job .*, host $(hostname), pid ${pids[0]}," \
  --checkpoint.dir="$WORK/a" "${ckpt[@]}"
refused same_trace 5 "checkpoint.trace: $WORK/a/trace.h5.lock is held by another job" \
  --checkpoint.dir="$WORK/b" --checkpoint.trace="$WORK/a/trace.h5"
snapshot "$WORK/a" >"$WORK/a.after"
diff "$WORK/a.before" "$WORK/a.after" >/dev/null || { echo "FAIL: job A's files changed while B was refused"; diff "$WORK/a.before" "$WORK/a.after"; exit 1; }
[ ! -e "$WORK/b/msd.lock" ] || { echo "FAIL: the refused job left its lock on $WORK/b"; exit 1; }
echo "checkpoint_owner: job A's $(wc -l <"$WORK/a.before") files are byte-identical before and after"
kill -CONT "${pids[@]}"
rc=0
wait $job_a || rc=$?
[ $rc = 0 ] || { echo "FAIL: job A exited $rc after the refused jobs"; tail -20 "$WORK/a.out"; exit 1; }
[ ! -e "$WORK/a/msd.lock" ] && [ ! -e "$WORK/a/trace.h5.lock" ] || { echo "FAIL: job A left its locks"; exit 1; }
"$MSD_BUILD/app/msd-replay" verify "$WORK/a/trace.h5" >"$WORK/verify.out" 2>&1 ||
  { echo "FAIL: job A's trace does not verify"; cat "$WORK/verify.out"; exit 1; }
echo "checkpoint_owner: job A ended with status 0 and its trace verifies"

# Stale locks: a process that is gone on this host, and another host's lock
# not refreshed for 20 minutes, are taken over; a fresh one of another host is not.
sleep 0.1 &
dead=$!
wait $dead
mkdir -p "$WORK/c"
printf 'job = mpirun gone\nhost = %s\npid = %s\nprocess_start = 1\nstarted_unix = 1\n' "$(hostname)" "$dead" >"$WORK/c/msd.lock"
TIMEOUT=60 run_job "$WORK/job.ini" --checkpoint.dir="$WORK/c" --job.steps=4 --emulator.time_scale=0 \
  --output.log_level=warn >"$WORK/stale.out" 2>&1 || { echo "FAIL: a stale lock (process gone) was not taken over"; tail "$WORK/stale.out"; exit 1; }
grep -q "taking over the lock $WORK/c/msd.lock of job mpirun gone, host $(hostname), pid $dead.*: its process is gone" "$WORK/stale.out" ||
  { echo "FAIL: no warning named the stale lock's owner"; cat "$WORK/stale.out"; exit 1; }
mkdir -p "$WORK/d"
printf 'job = slurm 7.0\nhost = elsewhere\npid = 1\nprocess_start = 1\nstarted_unix = 1\n' >"$WORK/d/msd.lock"
touch -d '20 minutes ago' "$WORK/d/msd.lock"
TIMEOUT=60 run_job "$WORK/job.ini" --checkpoint.dir="$WORK/d" --job.steps=4 --emulator.time_scale=0 >"$WORK/old.out" 2>&1 ||
  { echo "FAIL: a lock not refreshed for 20 minutes was not taken over"; tail "$WORK/old.out"; exit 1; }
grep -q "not refreshed for 1[0-9][0-9][0-9] s" "$WORK/old.out" || { echo "FAIL: no warning on the old lock"; cat "$WORK/old.out"; exit 1; }
printf 'job = slurm 7.0\nhost = elsewhere\npid = 1\nprocess_start = 1\nstarted_unix = 1\n' >"$WORK/d/msd.lock"
refused live_elsewhere 5 "checkpoint.dir: .* is held by another job \(job slurm 7.0, host elsewhere, pid 1" \
  --checkpoint.dir="$WORK/d" --resume
echo "checkpoint_owner: stale locks taken over with a warning; a live one on another host refused"

# An existing trace is unlinked, never truncated: a second name of the old
# file keeps its bytes.
echo "an earlier trace" >"$WORK/t.h5"
ln "$WORK/t.h5" "$WORK/t.h5.link"
TIMEOUT=60 run_job "$WORK/job.ini" --trace "$WORK/t.h5" --job.steps=4 --emulator.time_scale=0 >/dev/null 2>&1 ||
  { echo "FAIL: the run over an existing trace failed"; exit 1; }
[ "$(cat "$WORK/t.h5.link")" = "an earlier trace" ] || { echo "FAIL: the existing trace was truncated in place"; exit 1; }
"$MSD_BUILD/app/msd-replay" verify "$WORK/t.h5" >/dev/null || { echo "FAIL: the new trace does not verify"; exit 1; }
echo "checkpoint_owner: an existing trace was replaced without truncating it"

# Every planner checkpoint of job A made unreadable: --resume is refused,
# naming each; start_over starts at 0 and moves them aside.
for file in "$WORK"/a/planner-*.h5; do truncate -s 100 "$file"; done
refused unreadable 10 "checkpoint.resume: none of the 3 planner checkpoint\(s\) in $WORK/a reads back" \
  --checkpoint.dir="$WORK/a" "${ckpt[@]}" --resume
grep -c "planner-0000000000[0-9][0-9].h5: " "$WORK/unreadable.out" | grep -qx 3 ||
  { echo "FAIL: the refusal does not list each of the 3 files and why"; cat "$WORK/unreadable.out"; exit 1; }
refused fresh_over_used 10 "checkpoint.dir: $WORK/a holds the checkpoints of an earlier run" --checkpoint.dir="$WORK/a" "${ckpt[@]}"
TIMEOUT=60 run_job "$WORK/job.ini" --checkpoint.dir="$WORK/a" "${ckpt[@]}" --resume --checkpoint.start_over=true \
  --job.steps=8 --emulator.time_scale=0 --summary-json "$WORK/over.json" >"$WORK/over.out" 2>&1 ||
  { echo "FAIL: checkpoint.start_over did not start over"; tail "$WORK/over.out"; exit 1; }
[ "$(json_field "$WORK/over.json" first_step)" = 0 ] && ls "$WORK"/a/replaced-*/planner-*.h5 >/dev/null ||
  { echo "FAIL: start_over did not start at 0 with the old files moved aside"; ls -R "$WORK/a"; exit 1; }
echo "checkpoint_owner: checkpoint.start_over started at step 0 and moved the unreadable checkpoints aside"
