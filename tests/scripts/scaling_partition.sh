#!/usr/bin/env bash
# Profiles and the partition at a tiny size: msd-plan profile measures every
# source (an emulated read delay included), msd-plan partition writes a plan
# that meets its rate, and msd-run
# with topology.scaling = partition (a plan file, a hand-made plan that splits
# the sources with two threads per loader, spare ranks, or a plan computed at
# start-up) delivers the same batch stream as the static assignment; the
# loaders' profiles reach the summary; bad plans and options fail by name.
source "$(dirname "$0")/common.sh"
PLAN="$MSD_BUILD/app/msd-plan"
write_tiny_config "$WORK/job.ini"

"$PLAN" profile --config "$WORK/job.ini" --samples 16 --json >"$WORK/profile.json" 2>"$WORK/progress.txt"
grep -q "profile: images 16/16 samples" "$WORK/progress.txt" || { echo "FAIL: no progress"; cat "$WORK/progress.txt"; exit 1; }
"$PLAN" profile --config "$WORK/job.ini" --samples 8 | grep -q "^  corpus"
"$PLAN" partition --config "$WORK/job.ini" --profile "$WORK/profile.json" --steps-per-s 5 --out "$WORK/plan.json" \
  | tee "$WORK/plan.txt"
grep -q "rate met at every one of" "$WORK/plan.txt"
python3 - "$WORK/profile.json" "$WORK/plan.json" <<'PY'
import json, sys
profile = json.load(open(sys.argv[1]))["sources"]
plan = json.load(open(sys.argv[2]))
for name in ["web", "books", "images", "corpus"]:
    p = profile[name]
    assert p["samples_measured"] == 16, (name, p)
    assert p["seconds_per_sample"] > 0 and p["bytes_per_sample"] > 0 and p["open_bytes"] > 0, (name, p)
    assert p["positions_per_sample"] > 0, (name, p)
    assert plan["sources"][name]["ranks"] >= 1 and plan["sources"][name]["threads"] >= 1, plan
# Images carry pixels: far more bytes per sample than text.
assert profile["images"]["bytes_per_sample"] > 4 * profile["web"]["bytes_per_sample"], profile
assert plan["rate_met"] is True and plan["worst_margin"] >= 0, plan
assert sorted(n for g in plan["groups"] for n in g["sources"]) == ["books", "corpus", "images", "web"], plan
assert plan["loader_ranks"] == sum(g["ranks"] for g in plan["groups"]), plan
# The static assignment of topology.loaders = 2, evaluated for the same demand.
assert plan["static"]["loader_ranks"] == 2 and plan["loader_ranks"] <= 2, plan
PY
# Emulated storage latency is part of a read's cost offline too, as in the
# loaders: 20 ms per image read shows in the images' read seconds per sample,
# not in their transform's.
"$PLAN" profile --config "$WORK/job.ini" --samples 8 --source.images.read_delay_us=20000 --json >"$WORK/slow.json" \
  2>/dev/null
python3 - "$WORK/slow.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["sources"]
assert p["images"]["read_seconds_per_sample"] >= 0.02, p["images"]
assert p["images"]["transform_seconds_per_sample"] < 0.02, p["images"]
for name, q in p.items():
    assert abs(q["seconds_per_sample"] - q["read_seconds_per_sample"] - q["transform_seconds_per_sample"]) < 1e-12, q
assert p["web"]["seconds_per_sample"] < 0.02, p["web"]
PY
# Threads shorten reads as they do transforms: at 100 steps/s of 16 samples,
# images (0.2 of the mix at step 0) read 320 samples a second of over 20 ms
# each, more than 6.4 s of one thread per second. Loaders of one thread
# carry 0.9 s each (0.1 headroom): 8 ranks at least. On 8 threads a rank
# carries 7.2 s, and the plan needs fewer ranks, each with the threads.
"$PLAN" partition --config "$WORK/job.ini" --profile "$WORK/slow.json" --steps-per-s 100 --loader.threads=1 --json \
  >"$WORK/slow-plan-1.json"
"$PLAN" partition --config "$WORK/job.ini" --profile "$WORK/slow.json" --steps-per-s 100 --loader.threads=8 --json \
  >"$WORK/slow-plan.json"
python3 - "$WORK/slow.json" "$WORK/slow-plan-1.json" "$WORK/slow-plan.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["sources"]["images"]
one = json.load(open(sys.argv[2]))
eight = json.load(open(sys.argv[3]))
reads = 100 * 16 * 0.2 * p["read_seconds_per_sample"]
assert one["loader_ranks"] >= reads / 0.9 >= 7, (one["loader_ranks"], reads)
assert one["rate_met"] is True and eight["rate_met"] is True, (one, eight)
assert eight["loader_ranks"] < one["loader_ranks"] / 2, (eight["loader_ranks"], one["loader_ranks"])
images = eight["groups"][eight["sources"]["images"]["group"]]
assert images["threads"] > 1, images
# The threads carry the reads: ranks x threads x 0.9 cover the group's reads and transforms.
for r, t in zip(images["read_load"], images["transform_load"]):
    assert (r + t) / images["threads"] <= images["ranks"] * 0.9 * (1 + 1e-9), images
# The plan carries the profile's read part (as printed: 12 significant digits).
assert abs(eight["sources"]["images"]["read_seconds_per_sample"] - p["read_seconds_per_sample"]) <= 1e-9 * p["read_seconds_per_sample"], \
    (eight["sources"]["images"], p)
PY
# A profile from before reads and transforms were split loads, all of it as
# transform, with a warning that names the fields.
python3 - "$WORK/profile.json" "$WORK/old-profile.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for p in doc["sources"].values():
    del p["read_seconds_per_sample"], p["transform_seconds_per_sample"]
json.dump(doc, open(sys.argv[2], "w"))
PY
"$PLAN" partition --config "$WORK/job.ini" --profile "$WORK/old-profile.json" --steps-per-s 5 --json \
  >"$WORK/old-plan.json" 2>"$WORK/old-plan.err"
grep -q '"rate_met":true' "$WORK/old-plan.json"
grep -q "no read_seconds_per_sample and transform_seconds_per_sample" "$WORK/old-plan.err" \
  || { echo "FAIL: no warning for an old profile"; cat "$WORK/old-plan.err"; exit 1; }
ranks=$(json_field "$WORK/plan.json" loader_ranks)
# A plan that splits the sources over the two loaders, each on two threads.
cat >"$WORK/split.json" <<'JSON'
{"groups": [{"sources": ["web", "images"], "ranks": 1, "threads": 2},
            {"sources": ["books", "corpus"], "ranks": 1, "threads": 2}]}
JSON

run_job "$WORK/job.ini" --summary-json "$WORK/static.json" >/dev/null
run_job "$WORK/job.ini" --summary-json "$WORK/plan-run.json" --topology.scaling=partition \
  --topology.partition_plan="$WORK/plan.json" --loaders "$ranks" >/dev/null
run_job "$WORK/job.ini" --summary-json "$WORK/split-run.json" --topology.scaling=partition \
  --topology.partition_plan="$WORK/split.json" --loader.threads=2 >/dev/null
run_job "$WORK/job.ini" --summary-json "$WORK/spare-run.json" --topology.scaling=partition \
  --topology.partition_plan="$WORK/plan.json" --loaders $((ranks + 2)) >/dev/null
run_job "$WORK/job.ini" --summary-json "$WORK/startup-run.json" --topology.scaling=partition --output.log_level=info \
  2>"$WORK/startup.log" >/dev/null
grep -q "partition plan: loader 1 serves" "$WORK/startup.log" || { echo "FAIL: no plan logged"; cat "$WORK/startup.log"; exit 1; }
digest=$(json_field "$WORK/static.json" batch_digest)
for run in plan-run split-run spare-run startup-run; do
  other=$(json_field "$WORK/$run.json" batch_digest)
  if [ -z "$digest" ] || [ "$digest" != "$other" ]; then
    echo "FAIL: batch_digest of $run ($other) differs from static ($digest)"
    exit 1
  fi
done
python3 - "$WORK/split-run.json" <<'PY'
import json, sys
summary = json.load(open(sys.argv[1]))
assert summary["topology"]["scaling"] == "partition", summary["topology"]
profiles = summary["source_profiles"]
for name in ["web", "books", "images", "corpus"]:
    p = profiles[name]
    assert p["samples_measured"] > 0 and p["seconds_per_sample"] > 0 and p["open_bytes"] > 0, (name, p)
    assert p["bytes_per_sample"] > 0, (name, p)
PY
# The profiles a run reported plan as well as an offline profile.
"$PLAN" partition --config "$WORK/job.ini" --profile "$WORK/split-run.json" --steps-per-s 5 --json >"$WORK/from-run.json"
grep -q '"rate_met":true' "$WORK/from-run.json"

# Errors name the option, before any work.
expect_error() {  # expect_error PATTERN command...
  local pattern=$1
  shift
  if "$@" >"$WORK/err.txt" 2>&1; then echo "FAIL: '$*' succeeded"; exit 1; fi
  grep -q -- "$pattern" "$WORK/err.txt" || { echo "FAIL: '$*' did not say '$pattern':"; cat "$WORK/err.txt"; exit 1; }
}
expect_error "topology.scaling: 'elastic' is not a valid value" "$MSD_RUN" --config "$WORK/job.ini" --topology.scaling=elastic --print-world-size
expect_error "topology.partition_plan: a plan is used only with topology.scaling = partition" \
  "$MSD_RUN" --config "$WORK/job.ini" --topology.partition_plan="$WORK/plan.json" --print-world-size
expect_error "topology.loaders: the partition plan needs 2 loader ranks, the job has 1" \
  run_job "$WORK/job.ini" --topology.scaling=partition --topology.partition_plan="$WORK/split.json" --loaders 1
expect_error "loader.threads: the partition plan's group 0 runs 2 threads per loader, more than loader.threads = 1" \
  run_job "$WORK/job.ini" --topology.scaling=partition --topology.partition_plan="$WORK/split.json"
echo '{"groups": [{"sources": ["web"], "ranks": 1, "threads": 1}]}' >"$WORK/short.json"
expect_error "topology.partition_plan: .* has no group for source 'books'" \
  run_job "$WORK/job.ini" --topology.scaling=partition --topology.partition_plan="$WORK/short.json"
expect_error "^msd-plan: --steps-per-s" "$PLAN" partition --config "$WORK/job.ini" --steps-per-s -1
expect_error "^msd-plan: --profile: cannot read" "$PLAN" partition --config "$WORK/job.ini" --profile "$WORK/none.json"
expect_error "^msd-plan: --config" "$PLAN" profile --samples 4
expect_error "^msd-plan: --max-loader-mb: source" "$PLAN" partition --config "$WORK/job.ini" --profile "$WORK/profile.json" \
  --max-loader-mb 0.001
echo "scaling_partition: digest $digest with static, the plan ($ranks ranks), a split plan, spare ranks and a start-up plan"
