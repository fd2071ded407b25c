#!/usr/bin/env bash
# Soak: 600 steps with tiny windows, loader checkpoints, short random
# SIGSTOP/SIGCONT stalls of loader ranks (shadows too) and two long ones that
# make shadows take over. The batch stream must equal a clean run's, every
# step delivered, no hang (every run is under `timeout`).
#
# The long stops start just after a loader checkpoint is written (steps 200
# and 400), so each lands away from a checkpoint's handshake and write:
# checkpoint_join stops a loader inside the handshake; one stopped inside the
# collective write past its bound ends the job (docs/fault-tolerance.md).
source "$(dirname "$0")/common.sh"
write_tiny_config "$WORK/job.ini" "[topology]" "shadow_loaders = 2"
sed -i "s/^steps = 8/steps = 600/" "$WORK/job.ini"
args=(--loader.window_mb=1 --job.max_sample_bytes=65536 --job.prefetch_steps=8 --loader.deadline_ms=1500
      --checkpoint.loader_every=200)
run_reference "$WORK/job.ini" "$WORK/ref.json" "${args[@]}" --checkpoint.dir="$WORK/ref"
ref=$(json_field "$WORK/ref.json" batch_digest)

TIMEOUT=240 run_job "$WORK/job.ini" "${args[@]}" --checkpoint.dir="$WORK/soak" --summary-json "$WORK/soak.json" \
  >"$WORK/soak.out" 2>&1 &
job=$!
trap 'kill $job 2>/dev/null || true; rm -rf "$WORK"' EXIT
declare -A pids
# all_pids: fills pids for world ranks 1-4; true once every one is found.
all_pids() {
  for rank in 1 2 3 4; do pids[$rank]=${pids[$rank]:-$(rank_pid "$WORK/job.ini" $rank)}; done
  [ -n "${pids[1]}" ] && [ -n "${pids[2]}" ] && [ -n "${pids[3]}" ] && [ -n "${pids[4]}" ]
}
wait_until 60 "the processes of world ranks 1-4" all_pids
RANDOM=11
short=0 long=0 round=0
while kill -0 $job 2>/dev/null && [ ! -s "$WORK/soak.json" ]; do
  round=$((round + 1))
  if [ $long -lt 2 ] && [ -e "$WORK/soak/loaders-000000000$(( (long + 1) * 2 ))00-00000.h5" ]; then
    rank=$((long + 1))  # loaders 0 and 1 (world ranks 1, 2): stopped past the deadline
    pause=2.5
    long=$((long + 1))
  else
    rank=$((RANDOM % 4 + 1))
    pause=0.$((RANDOM % 3 + 1))
    short=$((short + 1))
  fi
  kill -STOP "${pids[$rank]}" 2>/dev/null || break
  sleep "$pause"
  kill -CONT "${pids[$rank]}" 2>/dev/null || break
  sleep 0.$((RANDOM % 5 + 3))
done
rc=0
wait $job || rc=$?
[ "$rc" = 0 ] || { echo "FAIL: exit status $rc"; grep -v "bad sample" "$WORK/soak.out" | tail -20; exit 1; }
digest=$(json_field "$WORK/soak.json" batch_digest)
takeovers=$(json_field "$WORK/soak.json" takeover_count)
echo "soak: $short short stalls, $long long stops, $takeovers takeovers, $(ls "$WORK/soak"/loaders-*.h5 | wc -l) loader checkpoints kept; digest $digest (clean run $ref)"
[ "$digest" = "$ref" ] || { echo "FAIL: the faults changed the batch stream"; exit 1; }
