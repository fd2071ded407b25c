#!/usr/bin/env bash
# Times a real PyTorch trainer (examples/bench_trainer.py: a small GPT on CPU,
# 2-way data-parallel, per-document attention) on one token stream of the
# demo corpus under the placements of `msd-plan place`: megatron,
# megatron_docmask, megatron_dp_balanced, msd_tokens, msd_greedy and
# msd_greedy_varlen, each trained --repeats times
# from the same initial model. Then fits the planner's cost model to the
# micro-batch times (msd-plan calibrate) and checks the fit on the
# micro-batches of a second stream (seed 2).
#   tools/bench-trainer.sh [--build DIR] [--json FILE] [--tiny] [--repeats N]
#                          [--seq-len S] [--samples-per-gpu K] [--steps T]
#                          [-- extra msd-plan place options]
# --build DIR: an existing build with app/msd-plan and app/msd-datagen
# (default build/test; nothing is built here). --json FILE: the results
# (default WORK/trainer.json): bench_trainer.py's JSON plus "cost_fit", msd-plan
# calibrate's fit and its held-out median_abs_error and p90_abs_error.
# The stream: --steps T (default 3) steps of 2 ranks x --samples-per-gpu K
# (default 6) documents, in sequences of --seq-len S (default 2048) positions;
# about 15 minutes on 2 idle cores (15 runs of ~50 s, and the seed-2 run).
# The msd placements are made with the planner's analytic cost for the
# trainer's model (a = 6 x its width; -- --cost-a A for another).
# --tiny: S 256, K 2, T 2 and a 1-layer model of width 32 (for tests).
# --corpus GLOB: the token source (Megatron .idx files; default: the demo
# dataset's corpus, made in data/demo by msd-datagen when absent).
# PYTHON: the interpreter with torch (default /usr/bin/python3).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
name=bench-trainer
build="$root/build/test"
python=${PYTHON:-/usr/bin/python3}
json=""
tiny=0
repeats=3
# The stream's size (defaults below). The time grows fast with it: one core
# trains a 2048-position row in ~3-4 s and a 4096-position row of one document
# in ~15 s (the output layer over the 8192-token vocabulary; attention's L^2),
# so S 4096, K 8, T 6 takes ~25 minutes.
seq_len="" samples="" steps="" corpus=""
place_extra=()

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
    --repeats) need_value "$@"; repeats=$2; shift 2 ;;
    --seq-len) need_value "$@"; seq_len=$2; shift 2 ;;
    --samples-per-gpu) need_value "$@"; samples=$2; shift 2 ;;
    --steps) need_value "$@"; steps=$2; shift 2 ;;
    --corpus) need_value "$@"; corpus=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    --) shift; place_extra=("$@"); break ;;
    *) echo "$name: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done

width=64 layers=2 timeout=3600
if ((tiny)); then
  : "${seq_len:=256}" "${samples:=2}" "${steps:=2}"
  width=32 layers=1 timeout=600
fi
model=(--width "$width" --layers "$layers" --heads 4)
: "${seq_len:=2048}" "${samples:=6}" "${steps:=3}"

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

# place SEED FILE: the placements of one stream.
place() {
  if ! "$build/app/msd-plan" place --json --lengths pile --dp 2 --seq-len "$seq_len" --micro-batches 2 \
      --samples-per-gpu "$samples" --steps "$steps" --seed "$1" \
      --hidden "$width" --modes megatron,megatron_docmask,megatron_dp_balanced,msd_tokens,msd_greedy,msd_greedy_varlen \
      ${place_extra[@]+"${place_extra[@]}"} \
      >"$2" 2>"$work/place-seed$1.log"; then
    cat "$work/place-seed$1.log" >&2
    echo "$name: msd-plan place failed" >&2
    exit 1
  fi
}
place 1 "$work/placements.json"
place 2 "$work/placements-seed2.json"
echo "$name: seq_len $seq_len, $samples documents per rank and step, $steps steps, $repeats repeats, model ${model[*]}"

trainer=("$python" "$root/examples/bench_trainer.py" --corpus "$corpus" "${model[@]}" --timeout "$timeout")
"${trainer[@]}" --placements "$work/placements.json" --repeats "$repeats" --json "$work/trainer.json" \
  --shapes-out "$work/shapes-seed1.jsonl"
echo "$name: recording the held-out micro-batches (seed 2: megatron_docmask and msd_greedy, once)"
"${trainer[@]}" --placements "$work/placements-seed2.json" --record-only --json "$work/trainer-seed2.json" \
  --shapes-out "$work/shapes-seed2.jsonl" >"$work/trainer-seed2.log"

# The cost model fitted to seed 1's micro-batches, judged on seed 2's.
fit_ok=1
if ! "$build/app/msd-plan" calibrate --config "$root/configs/train-demo.ini" \
    --shapes "$work/shapes-seed1.jsonl" --times "$work/shapes-seed1.jsonl.times" \
    --check-shapes "$work/shapes-seed2.jsonl" --check-times "$work/shapes-seed2.jsonl.times" --json \
    "--job.seq_len=$seq_len" "--model.hidden=$width" "--model.layers=$layers" \
    >"$work/cost-fit.json" 2>"$work/calibrate.log"; then
  fit_ok=0
fi

"$python" - "$work/trainer.json" "$work/cost-fit.json" "$fit_ok" "$out" <<'EOF'
import json, os, sys
trainer, fit, ok, out = sys.argv[1:5]
with open(trainer) as f:
    result = json.load(f)
result["cost_fit"] = None
if ok == "1":
    with open(fit) as f:
        result["cost_fit"] = json.load(f)
    c = result["cost_fit"]
    print("cost fit: a %s, R^2 %s on %s micro-batches; held out (seed 2, %s micro-batches): median_abs_error %s, "
          "p90_abs_error %s" % (c.get("cost_a"), c.get("r_squared"), c.get("probes"), c.get("held_out_micro_batches"),
                                c.get("median_abs_error"), c.get("p90_abs_error")))
with open(out + ".tmp", "w") as f:
    json.dump(result, f, indent=1)
    f.write("\n")
os.replace(out + ".tmp", out)
EOF
echo "$name: results in $out"
if ((fit_ok == 0)); then
  cat "$work/calibrate.log" >&2
  echo "$name: msd-plan calibrate failed (log: $work/calibrate.log); $out has \"cost_fit\": null" >&2
  exit 1
fi
