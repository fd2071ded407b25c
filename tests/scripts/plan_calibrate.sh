#!/usr/bin/env bash
# msd-plan calibrate: fits the planner's cost constants on the configuration's
# device model (a near-exact fit), writes probe shapes for a real trainer and
# recovers known constants from times computed for them, and refuses bad
# times files and bad constants with exit code 2 and a message naming where.
set -euo pipefail
: "${MSD_BUILD:?run through ctest}" "${MSD_SOURCE:?run through ctest}"
plan="$MSD_BUILD/app/msd-plan"
config="$MSD_SOURCE/configs/bench-longctx.ini"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$plan" calibrate --config "$config" --probes 64 | tee /dev/stderr | grep -q "^cost_a = "
json=$("$plan" calibrate --config "$config" --probes 64 --json)
/usr/bin/python3 - "$json" <<'PY'
import json, sys
fit = json.loads(sys.argv[1])
assert fit["probes"] == 64, fit
assert fit["r_squared"] > 0.999 and fit["max_relative_error"] < 0.05, fit
assert fit["cost_a"] > 0 and fit["cost_vision_scale"] > 0, fit
print("device fit ok")
PY

# A trainer's times: exactly c0 + c2 * (a*linear + quadratic + vs*vision),
# from the shapes alone (vision_a = 6 * model.vision_hidden, 768 here).
"$plan" calibrate --config "$config" --probes 48 --shapes-out "$work/shapes.jsonl"
[ "$(wc -l < "$work/shapes.jsonl")" -eq 48 ] || { echo "FAIL: expected 48 probe lines"; exit 1; }
/usr/bin/python3 - "$work/shapes.jsonl" "$work/times.txt" <<'PY'
import json, sys
a, vs, c0, c2 = 31234.0, 0.25, 1.5e-3, 2e-10
with open(sys.argv[1]) as shapes, open(sys.argv[2], "w") as out:
    out.write("# seconds per probe, in order\n")
    for line in shapes:
        lin = quad = vis = 0.0
        for seq in json.loads(line)["sequences"]:
            lin += sum(seq["segments"]) + seq["padding"]
            quad += sum(l * l for l in seq["segments"])
            vis += sum(6 * 768 * p + p * p for p in seq["patches"])
        out.write(f"{c0 + c2 * (a * lin + quad + vs * vis):.12e}\n")
PY
json=$("$plan" calibrate --config "$config" --probes 48 --times "$work/times.txt" --json)
/usr/bin/python3 - "$json" <<'PY'
import json, sys
fit = json.loads(sys.argv[1])
assert abs(fit["cost_a"] / 31234.0 - 1) < 1e-6, fit
assert abs(fit["cost_vision_scale"] / 0.25 - 1) < 1e-6, fit
assert abs(fit["overhead_seconds"] / 1.5e-3 - 1) < 1e-6, fit
print("trainer times fit ok")
PY

# Fitted on a trainer's own micro-batches (--shapes) and judged on others
# (--check-shapes): exact times predict the held-out ones exactly; held-out
# times 10% slower are 1/1.1 - 1 off.
grep -v '^#' "$work/times.txt" > "$work/values.txt"
head -n 24 "$work/shapes.jsonl" > "$work/fit.jsonl"; head -n 24 "$work/values.txt" > "$work/fit.txt"
tail -n 24 "$work/shapes.jsonl" > "$work/held.jsonl"; tail -n 24 "$work/values.txt" > "$work/held.txt"
awk '{ printf "%.12e\n", $1 * 1.1 }' "$work/held.txt" > "$work/slow.txt"
for times in held slow; do
  "$plan" calibrate --config "$config" --shapes "$work/fit.jsonl" --times "$work/fit.txt" \
    --check-shapes "$work/held.jsonl" --check-times "$work/$times.txt" --json > "$work/held-$times.json"
done
/usr/bin/python3 - "$work/held-held.json" "$work/held-slow.json" <<'PY'
import json, sys
exact, slow = (json.load(open(p)) for p in sys.argv[1:3])
assert exact["probes"] == 24 and exact["held_out_micro_batches"] == 24, exact
assert exact["median_abs_error"] < 1e-6 and exact["p90_abs_error"] < 1e-6, exact
assert abs(slow["median_abs_error"] - (1 - 1 / 1.1)) < 1e-6, slow
print("held-out check ok")
PY

expect_error() {  # expect_error PATTERN ARGS...: exit 2 and PATTERN on stderr
  local pattern=$1 status=0
  shift
  "$plan" calibrate --config "$config" "$@" 2>"$work/err" >/dev/null || status=$?
  [ "$status" -eq 2 ] && grep -q -- "$pattern" "$work/err" || {
    echo "FAIL: calibrate $* gave exit $status, expected 2 with '$pattern':"; cat "$work/err"; exit 1; }
}
head -n 10 "$work/times.txt" > "$work/short.txt"
expect_error "9 times for 48 probe micro-batches" --probes 48 --times "$work/short.txt"
{ head -n 3 "$work/times.txt"; echo "fast"; } > "$work/bad.txt"
expect_error "bad.txt:4: 'fast' is not a time" --probes 48 --times "$work/bad.txt"
expect_error "cannot open" --times "$work/missing.txt"
expect_error "model.cost_vision_scale" --model.cost_vision_scale=-1
expect_error "\-\-probes" --probes 3
expect_error "go together" --check-shapes "$work/held.jsonl"
expect_error "give their seconds with --times" --shapes "$work/fit.jsonl"
echo '{"sequences":[{"segments":[1.5]}]}' > "$work/badshape.jsonl"
expect_error "badshape.jsonl:1: a segment" --shapes "$work/badshape.jsonl" --times "$work/fit.txt"
echo "ok"
