#!/usr/bin/env bash
# msd-bench scaling at a tiny size: the pilot and the three modes run, the
# JSON has every key per mode, partition runs with its plan's loader ranks
# (msd-plan partition), static makes no move and online at least one, and
# every mode delivers the same batches. The figures themselves are not
# judged here (a busy test machine decides them); docs/scaling.md has
# measured ones.
source "$(dirname "$0")/common.sh"
export MSD_MPIRUN_FLAGS="${MSD_MPIEXEC#* }"  # the test flags without the program
timeout 240 "$MSD_BUILD/app/msd-bench" scaling --steps 16 --batch 16 --images 32 --image-side 64 --image-read-ms 0.5 \
  --loader-threads 2 --work-dir "$WORK/bench" --json >"$WORK/out.json"
cat "$WORK/out.json"
/usr/bin/python3 - "$WORK/out.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for key in ["shift_step", "time_scale", "pilot_step_s_after", "seconds_per_image", "seconds_per_text",
            "online_tokens_per_s_after_over_static", "same_stream"]:
    assert key in r, key
assert r["shift_step"] == 8
assert r["same_stream"] is True, "the modes delivered different batches"
modes = r["modes"]
for name in ["static", "partition", "online"]:
    m = modes[name]
    for key in ["data_wait_fraction_before", "data_wait_fraction_after", "tokens_per_s_before", "tokens_per_s_after",
                "loader_ranks", "loader_memory_bytes", "loader_peak_rss_bytes", "loader_rank_memory_bytes", "moves"]:
        assert key in m, (name, key)
    ranks = r["partition_plan"]["loader_ranks"] if name == "partition" else 3
    assert m["available"] is True and m["loader_ranks"] == ranks, m
    assert m["tokens_per_s_before"] > 0 and m["tokens_per_s_after"] > 0, m
    assert 0 <= m["data_wait_fraction_after"] <= 1, m
    assert m["loader_peak_rss_bytes"] > m["loader_memory_bytes"], m  # start-up included
    # start-up included, file-backed pages not: within the whole processes' peak RSS
    assert 0 < m["loader_rank_memory_bytes"] < m["loader_peak_rss_bytes"], m
plan = r["partition_plan"]
for key in ["loader_ranks", "memory_bytes", "worst_margin", "steps_per_s_max", "static_memory_bytes",
            "static_worst_margin"]:
    assert key in plan, key
assert plan["loader_ranks"] >= 1 and plan["worst_margin"] >= 0, plan
assert r["loader_threads"] == 2, r
assert sum(g["ranks"] for g in plan["groups"]) == plan["loader_ranks"], plan
assert all(1 <= g["threads"] <= 2 for g in plan["groups"]), plan
assert sorted(n for g in plan["groups"] for n in g["sources"].split("+")) == ["images", "text"], plan
assert modes["static"]["moves"] == 0, modes["static"]
assert modes["online"]["moves"] >= 1, modes["online"]
PY
"$MSD_BUILD/app/msd-bench" scaling --work-dir "$WORK/bench" --steps 16 --batch 16 --images 32 --image-side 64 \
  --image-read-ms 0.5 | grep -q "^ *partition " || { echo "FAIL: the text table has no partition row"; exit 1; }
set +e
"$MSD_BUILD/app/msd-bench" scaling --steps 4 >"$WORK/err" 2>&1
rc=$?
set -e
[ $rc -ne 0 ] && grep -q -- "--steps" "$WORK/err" || { echo "FAIL: bad --steps not reported"; cat "$WORK/err"; exit 1; }
echo "bench scaling: static, partition and online ran, same batches"
