#!/usr/bin/env bash
# Shadow loaders: a loader made to hang, stall or fail its reads is taken over
# by a shadow within two deadlines, and the batch stream does not change.
source "$(dirname "$0")/common.sh"
write_tiny_config "$WORK/job.ini" "[topology]" "shadow_loaders = 1"
# Without a fault: the reference stream (and a shadow that is never used).
run_job "$WORK/job.ini" --summary-json "$WORK/ref.json" >/dev/null
ref=$(json_field "$WORK/ref.json" batch_digest)
[ "$(json_field "$WORK/ref.json" takeover_count)" = 0 ] || { echo "FAIL: takeover without a fault"; exit 1; }
deadline_ms=400
for kind in hang stall fail; do
  run_job "$WORK/job.ini" --summary-json "$WORK/$kind.json" --fault.loader=1 --fault.kind=$kind --fault.step=3 \
    --fault.stall_ms=2000 --loader.deadline_ms=$deadline_ms >"$WORK/$kind.out" 2>&1
  digest=$(json_field "$WORK/$kind.json" batch_digest)
  count=$(json_field "$WORK/$kind.json" takeover_count)
  latency=$(grep -o '"latency_s":[0-9.e+-]*' "$WORK/$kind.json" | head -1 | cut -d: -f2)
  echo "$kind: takeovers $count, latency ${latency}s, digest $digest"
  [ "$digest" = "$ref" ] || { echo "FAIL: $kind changed the batch stream ($digest vs $ref)"; cat "$WORK/$kind.out"; exit 1; }
  [ "$count" = 1 ] || { echo "FAIL: $kind: $count takeovers, expected 1"; cat "$WORK/$kind.out"; exit 1; }
  awk -v l="$latency" -v d=$deadline_ms 'BEGIN { exit !(l * 1000 <= 2 * d) }' ||
    { echo "FAIL: $kind: takeover after ${latency}s, more than two deadlines"; exit 1; }
done
echo "shadow: hang, stall and fail taken over, batch digest unchanged ($ref)"
