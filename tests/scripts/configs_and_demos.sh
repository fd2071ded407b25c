#!/usr/bin/env bash
# Every file in configs/ and the README's two demo commands work as a user
# runs them, at a tiny size: each configuration parses and runs 2 steps under
# mpirun; tools/demo.sh and tools/train-demo.sh run on it (with this build,
# --build, so nothing is rebuilt). The configurations are copied beside a
# data/demo that is the tiny fixture dataset and a .cache/node that is the
# reference packages' folder (tools/reference/install.sh: the tokenizer.json
# files), so their relative paths resolve as they do in the repository. A
# configuration whose tokenizer.hf is not installed is reported skipped.
source "$(dirname "$0")/common.sh"
mkdir -p "$WORK/configs" "$WORK/data" "$WORK/.cache"
ln -s "$DATA" "$WORK/data/demo"
ln -s "${MSD_REFERENCE_DIR:-$MSD_SOURCE/.cache/node}" "$WORK/.cache/node"
count=0
skipped=""
for source_config in "$MSD_SOURCE"/configs/*.ini; do
  name=$(basename "$source_config")
  config="$WORK/configs/$name"
  cp "$source_config" "$config"
  hf=$(sed -n 's/^hf *= *//p' "$config")
  [[ -z "$hf" || "$hf" = /* ]] || hf="$WORK/configs/$hf"
  if [ -n "$hf" ] && [ ! -f "$hf" ]; then
    skipped+=" $name (no ${hf#"$WORK/configs/"}: tools/reference/install.sh installs it)"
    continue
  fi
  "$MSD_RUN" --config "$config" --print-world-size >/dev/null ||
    { echo "FAIL: configs/$name does not parse (the message above names the option)"; exit 1; }
  run_job "$config" --job.steps=2 --emulator.time_scale=0 --summary-json "$WORK/$name.json" >"$WORK/$name.out" 2>&1 ||
    { cat "$WORK/$name.out"; echo "FAIL: configs/$name did not run 2 steps"; exit 1; }
  [ "$(json_field "$WORK/$name.json" steps)" = 2 ] || { echo "FAIL: configs/$name: the summary has no 2 steps"; exit 1; }
  count=$((count + 1))
done
echo "configs: $count files parse and run 2 steps${skipped:+; skipped:$skipped}"

timeout 300 "$MSD_SOURCE/tools/demo.sh" --build "$MSD_BUILD" --config "$WORK/configs/demo.ini" --job.steps=3 \
  --summary-json "$WORK/demo.json" >"$WORK/demo.out" 2>&1 || { cat "$WORK/demo.out"; echo "FAIL: tools/demo.sh"; exit 1; }
[ "$(json_field "$WORK/demo.json" steps)" = 3 ] || { cat "$WORK/demo.out"; echo "FAIL: tools/demo.sh ran no 3 steps"; exit 1; }
[ -s "$MSD_BUILD/demo-out/metrics.png" ] || { echo "FAIL: tools/demo.sh drew no metrics.png"; exit 1; }
echo "demo: tools/demo.sh ran 3 steps (digest $(json_field "$WORK/demo.json" batch_digest)) and drew its metrics"

timeout 300 "$MSD_SOURCE/tools/train-demo.sh" --build "$MSD_BUILD" --config "$WORK/configs/train-demo.ini" --steps 3 \
  --summary-json "$WORK/train.json" >"$WORK/train.out" 2>&1 || { cat "$WORK/train.out"; echo "FAIL: tools/train-demo.sh"; exit 1; }
/usr/bin/python3 - "$WORK/train.json" <<'PY'
import json, math, sys
train = json.load(open(sys.argv[1]))
assert train["steps"] == 3 and len(train["losses"]) == 3 and all(math.isfinite(x) for x in train["losses"]), train
print(f"train-demo: tools/train-demo.sh trained 3 steps, loss {train['loss_first']:.3f} -> {train['loss_last']:.3f}")
PY
