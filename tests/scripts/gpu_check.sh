# tools/gpu-check.sh with the suite's msd-gpu-check (label gpu): where no GPU
# is present it must say so and exit with the skip code before building;
# on a GPU, its JSON must hold every documented key (docs/gpu.md) with
# values in range.
source "$(dirname "$0")/common.sh"
status=0
bash "$MSD_SOURCE/tools/gpu-check.sh" --bin "$MSD_BUILD/tools/gpu-check/msd-gpu-check" --out "$WORK/gpu.json" \
  --steps 40 --build "$WORK/unused" >"$WORK/log" 2>&1 || status=$?
cat "$WORK/log"
if [ "$status" -eq 77 ]; then
  grep -q '^gpu-check: skipped: no GPU' "$WORK/log" || { echo "FAIL: exit 77 without the skip line"; exit 1; }
  [ ! -e "$WORK/unused" ] || { echo "FAIL: built before finding there is no GPU"; exit 1; }
  exit "$MSD_SKIP_CODE"
fi
[ "$status" -eq 0 ] || { echo "FAIL: gpu-check exited $status"; exit 1; }
/usr/bin/python3 - "$WORK/gpu.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for key in ("device", "steps", "batch_shape", "batch_bytes", "h2d_gbps", "memcpy_gbps", "h2d_vs_memcpy",
            "hidden_fraction", "hidden_fraction_per_step", "compute_ms", "compute_ms_measured",
            "copy_ms_overlapped", "deliver_host_ms", "step_ms", "aims", "nccl_tp_broadcast"):
    assert key in r, f"missing {key}"
assert 0 <= r["hidden_fraction"] <= 1, r["hidden_fraction"]
assert r["h2d_gbps"]["median"] > 0 and r["memcpy_gbps"]["median"] > 0
n = r["nccl_tp_broadcast"]
assert n["measured"] is False and n["reason"], n  # no TP=2 run here: a reason, never a figure
assert r["step_ms"]["median"] >= r["compute_ms"] * 0.5, r["step_ms"]
print("gpu_check: JSON keys and ranges OK")
PY
