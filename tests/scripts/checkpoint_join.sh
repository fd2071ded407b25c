#!/usr/bin/env bash
# Loader checkpoints with a writer that stops or fails inside its own part.
# Each loader writes its part alone (docs/checkpoint.md, "Loader checkpoint"),
# so a writer stopped inside it holds no other rank:
# 1. fault.kind = checkpoint_stall stops loader 0 inside its part of the
#    checkpoint of step 20 for longer than the write bound (10 s): the planner
#    takes it over like any silent loader, its shadow serves its sources, the
#    later rounds are written by the live loaders, and the stream equals a
#    clean run's.
# 2. A writer whose part cannot be written (its temporary file's name taken by
#    a directory) ends the job at once with one line naming the file.
source "$(dirname "$0")/common.sh"
write_tiny_config "$WORK/job.ini" "[topology]" "shadow_loaders = 1"
sed -i 's/^steps = 8/steps = 70/' "$WORK/job.ini"
args=(--loader.deadline_ms=1000 --checkpoint.loader_every=20 --checkpoint.keep=100 --job.prefetch_steps=4)
run_reference "$WORK/job.ini" "$WORK/ref.json" "${args[@]}" --checkpoint.dir="$WORK/ref"
ref=$(json_field "$WORK/ref.json" batch_digest)
part() { printf '%s/loaders-%012d-%05d.h5' "$1" "$2" "$3"; }
for loader in 0 1 2; do  # two loaders and the shadow
  [ -e "$(part "$WORK/ref" 60 $loader)" ] || { echo "FAIL: the clean run has no part $loader of step 60"; ls "$WORK/ref"; exit 1; }
done

rc=0
TIMEOUT=120 run_job "$WORK/job.ini" "${args[@]}" --checkpoint.dir="$WORK/ckpt" --summary-json "$WORK/stall.json" \
  --fault.loader=0 --fault.kind=checkpoint_stall --fault.stall_ms=12000 --fault.step=10 >"$WORK/stall.out" 2>&1 || rc=$?
[ "$rc" = 0 ] || { echo "FAIL: exit status $rc, expected 0"; grep -v "bad sample" "$WORK/stall.out" | tail -20; exit 1; }
grep -q "loader 0 did not write its part of the loader checkpoint of step 20 within 10000 ms: shadow loader" \
  "$WORK/stall.out" || { echo "FAIL: loader 0 was not taken over in the round of step 20"
                         grep -v "bad sample" "$WORK/stall.out" | tail -30; exit 1; }
for step in 40 60; do
  for loader in 1 2; do
    [ -e "$(part "$WORK/ckpt" $step $loader)" ] || { echo "FAIL: no part $loader of step $step"; ls "$WORK/ckpt"; exit 1; }
  done
  [ ! -e "$(part "$WORK/ckpt" $step 0)" ] || { echo "FAIL: loader 0 wrote a part of step $step after its takeover"; exit 1; }
done
digest=$(json_field "$WORK/stall.json" batch_digest)
[ "$digest" = "$ref" ] || { echo "FAIL: the stream changed ($digest vs $ref)"; exit 1; }
takeovers=$(json_field "$WORK/stall.json" takeover_count)
echo "checkpoint_join: loader 0 stopped in its part of step 20 taken over (takeovers $takeovers)," \
     "rounds 40 and 60 written by loaders 1 and 2; digest $digest (clean run $ref)"

mkdir -p "$(part "$WORK/broken" 20 0).tmp"
rc=0
start=$SECONDS
TIMEOUT=60 run_job "$WORK/job.ini" "${args[@]}" --checkpoint.dir="$WORK/broken" >"$WORK/broken.out" 2>&1 || rc=$?
[ "$rc" = 3 ] || { echo "FAIL: a part that cannot be written: exit status $rc, expected 3"; tail -20 "$WORK/broken.out"; exit 1; }
grep -q "loaders-000000000020-00000.h5.tmp" "$WORK/broken.out" ||
  { echo "FAIL: the failed part write is not named"; tail -20 "$WORK/broken.out"; exit 1; }
echo "checkpoint_join: a part that cannot be written ends the job in $((SECONDS - start)) s with exit 3, naming the file:"
grep -m1 "loaders-000000000020-00000.h5.tmp" "$WORK/broken.out" | sed 's/^/  /'
