#!/usr/bin/env bash
# msd-bench compressed at a tiny size, so the benchmark cannot rot: on the
# fixture dataset's web text every variant (compressed JSON lines, Parquet)
# reads the plain files' records in both orders (no differences), reports
# positive rates (of wall and of CPU time, the fastest of two passes) and the
# index figures, and the block order decodes each restart interval or row
# group about once, as JSON with the keys docs/formats.md quotes and as text;
# a bad option is refused.
source "$(dirname "$0")/common.sh"
BENCH="$MSD_BUILD/app/msd-bench"

fail() {
  echo "FAIL: $1"
  [ -f "${2:-}" ] && cat "$2"
  exit 1
}

"$BENCH" --help | grep -q "compressed" || fail "msd-bench --help does not list compressed"
"$BENCH" compressed --data "$DATA" --variants lz4 >/dev/null 2>&1 && fail "an unknown variant was accepted"

"$BENCH" compressed --data "$DATA" --samples 0 --uniform-samples 60 --one-frame-samples 20 --frame-kib 16 \
  --gzip-spacing-kib 16 --row-group-rows 40 --block-records 16 --window-blocks 4 --cache-mib 4 \
  --repeats 2 --json >"$WORK/bench.json" || fail "msd-bench compressed failed"
python3 - "$WORK/bench.json" <<'PY' || fail "the JSON report is incomplete" "$WORK/bench.json"
import json, sys
report = json.load(open(sys.argv[1]))
rows = [(v["name"], v["order"]) for v in report["variants"]]
names = ["plain", "zstd_frames", "gzip", "zstd_one_frame", "parquet_zstd", "parquet_snappy"]
assert rows == [(n, o) for n in names for o in ("uniform", "block")], rows
records = report["records"]
assert report["repeats"] == 2, report["repeats"]
for v in report["variants"]:
    for key in ("stored_bytes", "compression_ratio", "index_build_s", "index_bytes", "index_bytes_per_mb", "reopen_s",
                "state_bytes", "read_mb_per_s", "read_tokenize_mb_per_s", "read_vs_plain", "read_tokenize_vs_plain",
                "read_mb_per_cpu_s", "read_tokenize_mb_per_cpu_s", "read_cpu_vs_plain", "read_tokenize_cpu_vs_plain",
                "tokens"):
        assert v[key] > 0, (v["name"], v["order"], key, v[key])
    assert v["mismatched_records"] == 0, v
    if not v["name"].startswith("parquet"):
        assert v["uncompressed_bytes"] == report["variants"][0]["stored_bytes"], v
    uniform_rows = 20 if v["name"] == "zstd_one_frame" else 60
    assert v["samples"] == (records if v["name"] == "plain" or v["order"] == "block" else uniform_rows), v
by = {(v["name"], v["order"]): v for v in report["variants"]}
plain = by[("plain", "uniform")]
assert plain["restart_points"] == 0 and plain["blocks_decoded"] == 0
assert by[("zstd_frames", "uniform")]["restart_points"] > by[("zstd_one_frame", "uniform")]["restart_points"] == plain["files"]
assert by[("gzip", "uniform")]["restart_points"] >= plain["files"]
# Row groups of 40 rows: a file's rows over 40, rounded up.
assert by[("parquet_zstd", "block")]["restart_points"] >= records // 40
# The block order decodes each block about once an epoch: far fewer decodes than records.
for name in names[1:]:
    block = by[(name, "block")]
    assert block["blocks_decoded"] < records / 4, block
    assert block["blocks_decoded"] >= block["restart_points"], block
PY

"$BENCH" compressed --data "$DATA" --samples 50 --variants gzip --work-dir "$WORK/kept" >"$WORK/bench.txt" ||
  fail "msd-bench compressed (text) failed"
grep -q "^gzip " "$WORK/bench.txt" || fail "no gzip row" "$WORK/bench.txt"
grep -q "^zstd_frames " "$WORK/bench.txt" && fail "--variants gzip still measured zstd_frames" "$WORK/bench.txt"
ls "$WORK"/kept/gzip/*.jsonl.gz >/dev/null || fail "--work-dir does not hold the compressed copies"
echo "bench_compressed: JSON and text reports complete"
