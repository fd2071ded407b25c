# Shared by the tests of the trainer's own faults (trainer_faults.sh,
# python_faults.sh): runs a job's ranks with a trainer program and measures
# the time from the fault to the end of the job. Sourced after common.sh.

# run_faulty NAME STATUS PROGRAM...: runs $CONFIG's world size of PROGRAM,
# checks the exit status, and sets `seconds` (from the first "fault at" or
# "finish at" line a rank printed to the end of the job) and `whole` (the
# whole run). The output is in $WORK/NAME.out.
run_faulty() {
  local name=$1 expected=$2 n start end mark rc=0
  shift 2
  n=$("$MSD_RUN" --config "$CONFIG" --print-world-size)
  start=$(now_s)
  # shellcheck disable=SC2086
  timeout 120 $MSD_MPIEXEC -n "$n" "$@" >"$WORK/$name.out" 2>&1 || rc=$?
  end=$(now_s)
  [ "$rc" != 124 ] || { echo "FAIL: $name: the job hung (timeout's 124)"; tail -30 "$WORK/$name.out"; exit 1; }
  [ "$rc" = "$expected" ] || { echo "FAIL: $name: exit status $rc, expected $expected"; tail -30 "$WORK/$name.out"; exit 1; }
  mark=$(grep -oE "(fault|finish) at [0-9.]+" "$WORK/$name.out" | head -1 | awk '{print $3}')
  [ -n "$mark" ] || { echo "FAIL: $name: no rank printed when its fault came"; tail -30 "$WORK/$name.out"; exit 1; }
  seconds=$(printf "%.1f" "$(echo "$end - $mark" | bc)")
  whole=$(printf "%.1f" "$(echo "$end - $start" | bc)")
}

# expect_line NAME PATTERN: one line of NAME's output matches PATTERN (ERE).
expect_line() {
  grep -qE -- "$2" "$WORK/$1.out" || { echo "FAIL: $1: no line matching '$2'"; tail -30 "$WORK/$1.out"; exit 1; }
}

# expect_last_lines NAME TEXT: TEXT is in the last 25 lines of NAME's output
# (where a user looks first).
expect_last_lines() {
  tail -n 25 "$WORK/$1.out" | grep -qF -- "$2" ||
    { echo "FAIL: $1: '$2' is not in the job's last lines"; tail -30 "$WORK/$1.out"; exit 1; }
}

# once NAME PATTERN: exactly one line of NAME's output matches PATTERN.
once() {
  local count
  count=$(grep -cE -- "$2" "$WORK/$1.out" || true)
  [ "$count" = 1 ] || { echo "FAIL: $1: $count lines match '$2', expected one"; tail -30 "$WORK/$1.out"; exit 1; }
}

# within NAME LIMIT: `seconds` is at most LIMIT.
within() {
  [ "$(echo "$seconds <= $2" | bc)" = 1 ] ||
    { echo "FAIL: $1: the job took ${seconds}s from the fault to its end (aim: <= $2 s)"; tail -30 "$WORK/$1.out"; exit 1; }
}

# digests FILE: a summary's step digests, one a line.
digests() { grep -o '"step_digests":\[[^]]*\]' "$1" | tr -d '[]"' | cut -d: -f2 | tr ',' '\n'; }

# summary_of NAME: the summary JSON line world rank 0 printed (into $WORK/NAME.json).
summary_of() {
  grep -E '^\{.*"steps"' "$WORK/$1.out" | head -1 >"$WORK/$1.json"
  [ -s "$WORK/$1.json" ] || { echo "FAIL: $1: no summary line"; tail -30 "$WORK/$1.out"; exit 1; }
}

# none NAME PATTERN: no line of NAME's output matches PATTERN.
none() {
  ! grep -qE -- "$2" "$WORK/$1.out" || { echo "FAIL: $1: a line matches '$2'"; grep -E -- "$2" "$WORK/$1.out" | head; exit 1; }
}

# write_slow_job: $WORK/job.ini with 40 steps of emulated compute (time_scale
# 20: a few seconds), planner checkpoints every 4 steps in `ckpt`, and its
# world size in `n`.
write_slow_job() {
  write_tiny_config "$WORK/job.ini"
  sed -i -e 's/^steps = 8/steps = 40/' -e 's/^time_scale = .*/time_scale = 20/' "$WORK/job.ini"
  ckpt=(--checkpoint.planner_every=4)
  n=$("$MSD_RUN" --config "$WORK/job.ini" --print-world-size)
}
