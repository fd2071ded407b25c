#!/usr/bin/env bash
# A SIGSTOPped client or planner (job.stall_timeout_s): the planner names a
# client that stopped acknowledging steps, the clients name a planner that
# stopped sending plans, and either way the whole job ends with exit status 3
# soon after the bound, instead of waiting forever.
source "$(dirname "$0")/common.sh"
write_tiny_config "$WORK/job.ini"
sed -i 's/^steps = 8/steps = 400/' "$WORK/job.ini"
trap 'kill -KILL ${pid:-} 2>/dev/null || true; rm -rf "$WORK"' EXIT
# world: planner 0, loaders 1-2, clients 3-4 (dp 2)

# stop_rank NAME RANK BOUND PATTERN: stops world rank RANK a second into the
# run; the job must end with status 3 within BOUND s of the stop, with a
# fatal line matching PATTERN.
stop_rank() {
  local name=$1 rank=$2 bound=$3 pattern=$4 rc=0 stopped_at ended_at
  # shellcheck disable=SC2086
  TIMEOUT=90 run_job "$WORK/job.ini" --job.stall_timeout_s=2 --output.progress_every=1 --output.log_level=info \
    ${EXTRA:-} >"$WORK/$name.out" 2>&1 &
  local job=$!
  pid=
  wait_until 60 "$name: the process of world rank $rank" found_rank_pid "$WORK/job.ini" "$rank"
  wait_until 30 "$name: step 5" grep -q "${STEP_PATTERN:-step 5/}" "$WORK/$name.out"
  kill -STOP "$pid"
  stopped_at=$(now_s)
  wait $job || rc=$?
  ended_at=$(now_s)
  kill -KILL "$pid" 2>/dev/null || true
  [ "$rc" = 3 ] || { echo "FAIL: $name: exit status $rc, expected 3"; tail -20 "$WORK/$name.out"; exit 1; }
  grep -E "fatal on world rank [0-9]+: .*$pattern" "$WORK/$name.out" | head -1 >"$WORK/$name.line" ||
    { echo "FAIL: $name: no fatal line matching '$pattern'"; tail -20 "$WORK/$name.out"; exit 1; }
  local seconds
  seconds=$(echo "$ended_at - $stopped_at" | bc)
  awk -v s="$seconds" -v b="$bound" 'BEGIN { exit !(s <= b) }' ||
    { echo "FAIL: $name: the job took ${seconds}s after the stop, more than ${bound}s"; exit 1; }
  echo "$name: exit status 3, ${seconds}s after SIGSTOP: $(cat "$WORK/$name.line")"
}

stop_rank client 4 12 "client world ranks? ([0-9]+, )?4 did not acknowledge step [0-9]+ within 2 s"
stop_rank planner 0 22 "the planner \(world rank 0\) sent no plan for step [0-9]+ within 12 s"
grep -q '^\[planner\]' "$WORK/client.line" || { echo "FAIL: the stopped client is not named by the planner"; exit 1; }
grep -q '^\[client [01]\]' "$WORK/planner.line" || { echo "FAIL: the stopped planner is not named by a client"; exit 1; }
# Colocated (no planner, nothing inside msd waits between steps): a stopped
# client holds its DP peer in the trainer's gradient all-reduce; the peer's
# step watchdog ends the job 2 s after its last step request. World: clients
# 0-1 (dp 2).
EXTRA="--mode=colocated_samples" STEP_PATTERN="bad sample" stop_rank colocated 1 12 \
  "a colocated step did not finish within 2 s \(waiting in the trainer between two steps"
echo "stuck_peer: a stopped client and a stopped planner each ended the job with status 3, and a stopped colocated client"
