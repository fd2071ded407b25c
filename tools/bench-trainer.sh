#!/usr/bin/env bash
# Times a real PyTorch trainer (examples/bench_trainer.py: a small GPT on CPU,
# bf16 matrix products, per-document or whole-row causal attention) on the
# same token streams under every placement `msd-plan place` makes, with
# data parallelism emulated at 8 and 16 ranks: every rank's micro-batches
# trained for real on one pinned core, a step timed as its slowest rank plus
# a measured all-reduce and optimizer step.
#   tools/bench-trainer.sh [--build DIR] [--json FILE] [--tiny] [--seeds N]
#                          [--steps T] [--modes LIST] [--workers auto|1|2]
#                          [--clock wall|cpu] [--corpus GLOB]
# In order:
# 1. The emulation check, at DP 2 (seq_len 8192, Pile lengths, 4 steps, the
#    megatron placement, 3 repeats each): the real 2-process run's wall
#    seconds against the emulation of the same steps, two ranks at a time
#    (one per core) and one at a time. Two at a time is used below only when
#    it is within 5% of the real run and of one at a time (--workers auto).
# 2. The planner's cost per seq_len: a calibration stream (seed 1001, 2
#    steps) trained emulated, `msd-plan calibrate` fitted to its micro-batch
#    seconds; the rows' msd placements are placed with that a (and the fitted
#    cost of a micro-batch).
# 3. The rows: DP 16 at seq_len 8192 and DP 8 at 4096 on Pile lengths, DP 16
#    at 8192 on the long-tail mix (`--lengths pareto`: 15% Pareto-long
#    documents); each --seeds N (default 5) streams of --steps T (default
#    10) steps, 2 micro-batches a rank (msd's may vary), the stream's
#    documents per rank and step sized to about 1.3 rows; every placement of
#    `msd-plan place` (or --modes), each trained on the same tokens (checked).
# 4. The calibrated cost judged on the rows' micro-batches (held out).
# --json FILE (default WORK/trainer.json): "emulated_dp" (one row per dp,
# seq_len, mix: placements' tokens and seconds_sum, per-step maxima, best
# msd placement, its speedups over the baselines with 95% bootstrap
# intervals over the seeds, the micro-batch cost fit), "emulation_check",
# "dp2_real" (the check's real run), "cost_fit" (per seq_len) and "model".
# About 25 minutes on 2 idle cores when two ranks run at a time (about 45 one
# at a time), with 7 to 9 placements. --clock cpu times micro-batches by CPU time (a shared
# machine); --workers 1|2 skips the choice. --tiny: seq_len 256-512, DP 4,
# 2 seeds x 2 steps, the check at seq_len 256 (for tests).
# --build DIR: an existing build with app/msd-plan and app/msd-datagen
# (default build/test; nothing is built here). --corpus GLOB: the token
# source (Megatron .idx files; default: the demo dataset's corpus, made in
# data/demo by msd-datagen when absent). PYTHON: the interpreter with torch
# (default /usr/bin/python3).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
name=bench-trainer
build="$root/build/test"
python=${PYTHON:-/usr/bin/python3}
json="" tiny=0 seeds="" steps="" modes="" workers=auto clock=wall corpus=""

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
}
need_value() {
  if (($# < 2)); then
    echo "$name: $1 needs a value (see --help)" >&2
    exit 2
  fi
}
while (($#)); do
  case $1 in
    --build) need_value "$@"; build=$2; shift 2 ;;
    --json) need_value "$@"; json=$2; shift 2 ;;
    --tiny) tiny=1; shift ;;
    --seeds) need_value "$@"; seeds=$2; shift 2 ;;
    --steps) need_value "$@"; steps=$2; shift 2 ;;
    --modes) need_value "$@"; modes=$2; shift 2 ;;
    --workers) need_value "$@"; workers=$2; shift 2 ;;
    --clock) need_value "$@"; clock=$2; shift 2 ;;
    --corpus) need_value "$@"; corpus=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "$name: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case $workers in auto | 1 | 2) ;; *) echo "$name: --workers must be auto, 1 or 2" >&2; exit 2 ;; esac
case $clock in wall | cpu) ;; *) echo "$name: --clock must be wall or cpu" >&2; exit 2 ;; esac

# The model (docs/evaluation.md "Real compute"): width 32, one block, one
# attention head of 16 dimensions, a 256-token vocabulary; its a is about
# seq_len/5 at 8192.
model=(--width 32 --layers 1 --heads 1 --head-dim 16 --vocab 256 --block 512 --pad 64)
# Rows: dp:seq_len:lengths:documents per rank and step (about 1.3 rows of the
# mix's mean length, Pile 1.1k and long tail 2.1k tokens: the compute is the
# budget).
rows=(16:8192:pile:10 8:4096:pile:5 16:8192:pareto:5)
check=(2 8192 pile 10 4)  # dp seq_len lengths documents steps
check_repeats=3 calibration_steps=2 timeout=3600
if ((tiny)); then
  rows=(4:512:pile:2 4:512:pareto:1)
  check=(2 256 pile 2 2)
  check_repeats=1
  timeout=600
  : "${seeds:=2}" "${steps:=2}"
fi
: "${seeds:=5}" "${steps:=10}"
for v in "$seeds" "$steps"; do
  if ! [[ $v =~ ^[1-9][0-9]*$ ]]; then
    echo "$name: --seeds and --steps must be positive integers" >&2
    exit 2
  fi
done

if [ ! -d "$build" ]; then
  echo "$name: no build directory $build: build msd first" \
    "(cmake -S . -B build/test && cmake --build build/test), or give --build DIR" >&2
  exit 2
fi
build=$(cd "$build" && pwd)
for tool in msd-plan msd-datagen; do
  if [ ! -x "$build/app/$tool" ]; then
    echo "$name: $build/app/$tool is missing: build it first (cmake --build $build --target $tool)," \
      "or give --build DIR" >&2
    exit 2
  fi
done
if ! "$python" -c 'import torch, numpy' 2>/dev/null; then
  echo "$name: $python cannot import torch and numpy (set PYTHON to an interpreter that can)" >&2
  exit 2
fi
if [ -n "$json" ]; then
  mkdir -p "$(dirname "$json")"
  json="$(cd "$(dirname "$json")" && pwd)/$(basename "$json")"
fi

work=$(mktemp -d /tmp/msd-bench-trainer.XXXXXX)
echo "$name: work directory $work"
out=${json:-$work/trainer.json}
started=$(date +%s)

if [ -z "$corpus" ]; then
  data="$root/data/demo"
  if [ ! -f "$data/MANIFEST" ]; then
    echo "$name: generating the demo dataset in $data"
    if ! "$build/app/msd-datagen" --out "$data" --scale demo --seed 1 >"$work/datagen.log" 2>&1; then
      tail -n 20 "$work/datagen.log" >&2
      echo "$name: msd-datagen failed (log: $work/datagen.log)" >&2
      exit 1
    fi
  fi
  corpus="$data/corpus/*.idx"
fi
if ! compgen -G "$corpus" >/dev/null; then
  echo "$name: no corpus files match $corpus" >&2
  exit 1
fi

# place FILE DP SEQ_LEN LENGTHS DOCUMENTS STEPS SEED [msd-plan place options]: one stream's placements.
place() {
  local file=$1 dp=$2 seq_len=$3 lengths=$4 documents=$5 steps=$6 seed=$7
  shift 7
  if ! "$build/app/msd-plan" place --json --dp "$dp" --seq-len "$seq_len" --lengths "$lengths" \
      --samples-per-gpu "$documents" --micro-batches 2 --steps "$steps" --seed "$seed" ${modes:+--modes "$modes"} "$@" \
      >"$file" 2>"$file.log"; then
    cat "$file.log" >&2
    echo "$name: msd-plan place failed" >&2
    exit 1
  fi
}
trainer=("$python" "$root/examples/bench_trainer.py" --corpus "$corpus" "${model[@]}" --timeout "$timeout")
# The placements: --modes, or every one msd-plan place makes by default and
# each of the Megatron baselines and msd variants below that it knows (msd's
# with cut-aware packing, variable micro-batch counts and the outlier hold).
if [ -z "$modes" ]; then
  place "$work/modes.json" 2 256 pile 2 1 1
  modes=$("$python" -c 'import json, sys; print(",".join(json.load(open(sys.argv[1]))["placements"]))' \
    "$work/modes.json")
  for extra in megatron_docmask megatron_dp_balanced msd_greedy msd_greedy_varlen \
      msd_greedy_cut_vmb msd_greedy_cut_vmb_hold; do
    if [[ ,$modes, != *,$extra,* ]] && "$build/app/msd-plan" place --json --dp 2 --seq-len 256 --steps 1 \
        --samples-per-gpu 2 --modes "$extra" >/dev/null 2>&1; then
      modes+=",$extra"
    fi
  done
fi
echo "$name: placements $modes"

# 1. The emulation check at DP 2.
read -r c_dp c_seq c_lengths c_docs c_steps <<<"${check[*]}"
place "$work/check.json" "$c_dp" "$c_seq" "$c_lengths" "$c_docs" "$c_steps" 1 --hidden 32
c_placement=$("$python" -c 'import json, sys; p = json.load(open(sys.argv[1]))["placements"]
print("megatron" if "megatron" in p else next(iter(p)))' "$work/check.json")
echo "$name: emulation check: $c_placement at DP $c_dp, seq_len $c_seq, $c_steps steps: the real run, then emulated"
"${trainer[@]}" --placements "$work/check.json" --modes "$c_placement" --repeats "$check_repeats" --pin \
  --json "$work/check-real.json" >"$work/check-real.log"
for w in 2 1; do
  "${trainer[@]}" --emulate --workers "$w" --clock "$clock" --placements "$work/check.json" \
    --modes "$c_placement" --repeats "$check_repeats" --json "$work/check-emulated-$w.json" \
    --shapes-out "$work/check-$w.jsonl" >"$work/check-emulated-$w.log"
done
workers=$("$python" - "$work" "$c_placement" "$workers" <<'EOF'
import json, sys
work, name, choice = sys.argv[1:4]
real = json.load(open(f"{work}/check-real.json"))
emulated = {w: json.load(open(f"{work}/check-emulated-{w}.json")) for w in (1, 2)}
wall = real["placements"][name]["seconds_median"]  # medians of the repeats
two, one = (emulated[w]["placements"][name]["seconds_sum"] for w in (2, 1))
honest = abs(two / wall - 1) <= 0.05 and abs(two / one - 1) <= 0.05
used = int(choice) if choice != "auto" else (2 if honest else 1)
chosen = two if used == 2 else one
check = {"dp": real["dp"], "placement": name, "emulated_s": chosen, "wall_s": wall, "ratio": chosen / wall,
         "workers": used, "emulated_two_at_a_time_s": two, "emulated_one_at_a_time_s": one,
         "two_over_one": two / one, "two_at_a_time_within_5_percent": honest, "chosen_by": choice,
         "seq_len": real["seq_len"], "mix": real["lengths"], "tokens": real["tokens"],
         "steps": real["placements"][name]["steps"], "repeats": real["repeats"], "clock": emulated[2]["clock"]}
json.dump(check, open(f"{work}/check.json.result", "w"), indent=1)
print(used)
EOF
)
"$python" - "$work/check.json.result" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
print(f"emulation check (dp {c['dp']}, {c['placement']}, {c['tokens']} tokens): real {c['wall_s']:.2f} s; "
      f"emulated two at a time {c['emulated_two_at_a_time_s']:.2f} s, "
      f"one at a time {c['emulated_one_at_a_time_s']:.2f} s "
      f"(two/one {c['two_over_one']:.3f}); used: {c['workers']} at a time, emulated/real {c['ratio']:.3f}")
EOF

# 2. The planner's a per seq_len, fitted to a calibration stream's micro-batches.
declare -A cost_a cost_mb  # per seq_len: the fitted a and micro-batch constant (msd-plan calibrate)
for row in "${rows[@]}"; do
  IFS=: read -r dp seq_len lengths documents <<<"$row"
  [ -n "${cost_a[$seq_len]:-}" ] && continue
  place "$work/calibration-$seq_len.json" "$dp" "$seq_len" pile "$documents" "$calibration_steps" 1001 --hidden 32
  "${trainer[@]}" --emulate --workers "$workers" --clock "$clock" --placements "$work/calibration-$seq_len.json" \
    --shapes-out "$work/calibration-$seq_len.jsonl" \
    --json "$work/calibration-$seq_len.row.json" >"$work/calibration-$seq_len.log"
  if "$build/app/msd-plan" calibrate --config "$root/configs/train-demo.ini" \
      --shapes "$work/calibration-$seq_len.jsonl" --times "$work/calibration-$seq_len.jsonl.times" --json \
      "--job.seq_len=$seq_len" --model.hidden=32 --model.layers=1 \
      >"$work/cost-fit-$seq_len.json" 2>"$work/calibrate-$seq_len.log"; then
    read -r cost_a[$seq_len] cost_mb[$seq_len] < <("$python" -c 'import json, sys
fit = json.load(open(sys.argv[1]))
print(round(fit["cost_a"]), round(max(0.0, fit.get("cost_micro_batch", 0.0))))' "$work/cost-fit-$seq_len.json")
  else  # too few or too noisy times (a tiny run): the analytic cost, and the JSON says so
    cat "$work/calibrate-$seq_len.log" >&2
    cost_a[$seq_len]=0 cost_mb[$seq_len]=0
  fi
  echo "$name: seq_len $seq_len: the planner's a = ${cost_a[$seq_len]} (0: not fitted, 6 x width)," \
    "a micro-batch's constant ${cost_mb[$seq_len]} units"
done

# 3. The rows.
index=0
for row in "${rows[@]}"; do
  IFS=: read -r dp seq_len lengths documents <<<"$row"
  files=()
  for seed in $(seq 1 "$seeds"); do
    file="$work/row$index-seed$seed.json"
    place "$file" "$dp" "$seq_len" "$lengths" "$documents" "$steps" "$seed" --hidden 32 \
      --cost-a "${cost_a[$seq_len]}" --cost-micro-batch "${cost_mb[$seq_len]}"
    files+=("$file")
  done
  # The calibration stream's micro-batch seconds per position, over the ranks run at a time.
  estimate=$("$python" -c 'import json, sys
positions = lambda f: json.load(open(f))["positions"]
compute = sum(float(x) for x in open(sys.argv[2])) / int(sys.argv[3])
print(round(compute * sum(map(positions, sys.argv[4:])) / positions(sys.argv[1])))' \
    "$work/calibration-$seq_len.json" "$work/calibration-$seq_len.jsonl.times" "$workers" "${files[@]}")
  echo "$name: row $((index + 1))/${#rows[@]}: dp $dp, seq_len $seq_len, $lengths, $seeds seeds x $steps steps" \
    "(about $estimate s of compute at the calibration stream's pace)"
  row_started=$(date +%s)
  "${trainer[@]}" --emulate --workers "$workers" --clock "$clock" --placements "${files[@]}" \
    --json "$work/row$index.json" --shapes-out "$work/row$index.jsonl" \
    2>"$work/row$index.log"
  echo "$name: row $((index + 1)) took $(($(date +%s) - row_started)) s"
  # 4. The calibrated cost judged on this row's micro-batches.
  if [ "${cost_a[$seq_len]}" != 0 ] && ! "$build/app/msd-plan" calibrate --config "$root/configs/train-demo.ini" \
      --shapes "$work/calibration-$seq_len.jsonl" --times "$work/calibration-$seq_len.jsonl.times" \
      --check-shapes "$work/row$index.jsonl" --check-times "$work/row$index.jsonl.times" --json \
      "--job.seq_len=$seq_len" --model.hidden=32 --model.layers=1 >"$work/held-out-$index.json" \
      2>"$work/held-out-$index.log"; then
    cat "$work/held-out-$index.log" >&2
    rm -f "$work/held-out-$index.json"
  fi
  index=$((index + 1))
done

"$python" - "$work" "$out" "$steps" "$(($(date +%s) - started))" "${rows[@]}" <<'EOF'
import json, os, sys
work, out, steps, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
specs = sys.argv[5:]
result = {"emulated_dp": [], "emulation_check": json.load(open(f"{work}/check.json.result")),
          "dp2_real": json.load(open(f"{work}/check-real.json")), "cost_fit": {}, "seconds": seconds}
for index, spec in enumerate(specs):
    dp, seq_len, lengths, documents = spec.split(":")
    row = json.load(open(f"{work}/row{index}.json"))
    row.update(steps=steps, samples_per_gpu=int(documents), micro_batches=2)
    placed = json.load(open(row["placements_files"][0]))
    row["cost_a"], row["cost_micro_batch"] = placed.get("cost_a"), placed.get("cost_micro_batch")
    held = f"{work}/held-out-{index}.json"
    if os.path.exists(held):
        h = json.load(open(held))
        row["cost_fit_held_out"] = {k: h[k] for k in ("held_out_micro_batches", "median_abs_error", "p90_abs_error")}
    else:
        row["cost_fit_held_out"] = None
    result["emulated_dp"].append(row)
    result["model"] = row["model"]
    fit = f"{work}/cost-fit-{seq_len}.json"
    if seq_len not in result["cost_fit"]:
        result["cost_fit"][seq_len] = json.load(open(fit)) if os.path.getsize(fit) else None
with open(out + ".tmp", "w") as f:
    json.dump(result, f, indent=1)
    f.write("\n")
os.replace(out + ".tmp", out)
for row in result["emulated_dp"]:
    s = row["speedup"]
    said = ", ".join(f"{k.replace('best_over_', 'over ')} {v['geomean']:.3f}x [{v['ci95'][0]:.3f}, {v['ci95'][1]:.3f}]"
                     for k, v in s.items() if v)
    fit = row["cost_fit"] or {}
    a = fit.get("a")
    print(f"dp {row['dp']}, seq_len {row['seq_len']}, {row['mix']}: best {row['best']}: {said}"
          + (f"; fitted a {a:.0f} (seq_len/{row['seq_len'] / a:.1f})" if a else ""))
EOF
echo "$name: results in $out ($(($(date +%s) - started)) s)"
