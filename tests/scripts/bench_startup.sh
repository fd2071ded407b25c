#!/usr/bin/env bash
# msd-bench startup at a tiny size, so the benchmark cannot rot: every row
# runs and reports every figure; with the loaders sharing the indexing, a
# cold msd run builds each file's index exactly once (its loaders split the
# files) and a warm one builds none; descriptors stay bounded. The times
# themselves are not judged here (a busy test machine decides them);
# docs/scaling.md, "Start-up", has measured ones.
source "$(dirname "$0")/common.sh"
export MSD_MPIRUN_FLAGS="${MSD_MPIEXEC#* }"  # the test flags without the program
BENCH="$MSD_BUILD/app/msd-bench"
"$BENCH" --help | grep -q "startup" || { echo "FAIL: msd-bench --help does not list startup"; exit 1; }
"$BENCH" startup --help | grep -q -- "--small-shards" || { echo "FAIL: msd-bench startup --help"; exit 1; }
"$BENCH" startup --loaders 1 >/dev/null 2>&1 && { echo "FAIL: --loaders 1 was accepted"; exit 1; }
timeout 240 "$BENCH" startup --small-shards 60 --small-shard-docs 3 --large-shards 10 --large-shard-docs 2 --loaders 4 \
  --clients 1 --repeats 1 --work-dir "$WORK/bench" --json >"$WORK/out.json"
cat "$WORK/out.json"
/usr/bin/python3 - "$WORK/out.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["dataset"]["small_shards"] == 60 and r["dataset"]["large_shards"] == 10, r["dataset"]
assert r["dataset"]["small_docs"] == 180 and r["dataset"]["large_docs"] == 20, r["dataset"]
rows = {(row["layout"], row["cache"]): row for row in r["rows"]}
assert set(rows) == {("msd", "cold"), ("msd", "warm"), ("colocated", "cold"), ("colocated", "warm")}, rows.keys()
for key, row in rows.items():
    msd = key[0] == "msd"
    figures = ["launch_to_first_batch_s", "launch_s", "job_to_first_batch_s", "open_index_s", "first_batch_s",
               "client_rss_bytes", "client_open_files", "client_cpu_s", "files_indexed", "files_cached", "run_wall_s"]
    if msd:
        figures += ["hello_s", "planner_state_s", "agree_s", "first_step_s", "planner_rss_bytes", "loader_rss_bytes",
                    "planner_open_files", "loader_open_files", "planner_cpu_s", "loader_cpu_s"]
    for f in figures:
        assert f in row and set(row[f]) == {"median", "min", "max"}, (key, f)
    assert row["job_to_first_batch_s"]["median"] > 0 and row["client_rss_bytes"]["median"] > 0, (key, row)
    for role in ("client", "loader", "planner"):
        if role + "_open_files" in row:
            assert 0 < row[role + "_open_files"]["max"] < 64, (key, role, row[role + "_open_files"])
# Two loaders per source split its files: each file is indexed once, cold.
assert rows[("msd", "cold")]["files_indexed"]["max"] == 70, rows[("msd", "cold")]["files_indexed"]
assert rows[("msd", "warm")]["files_indexed"]["max"] == 0, rows[("msd", "warm")]["files_indexed"]
assert rows[("colocated", "warm")]["files_indexed"]["max"] == 0
PY
echo "bench_startup: every row and figure reported; each file indexed once cold, none warm"
