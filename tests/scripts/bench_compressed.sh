#!/usr/bin/env bash
# msd-bench compressed at a tiny size, so the benchmark cannot rot: on the
# fixture dataset's web text every variant reads the plain files' records
# (no differences), reports positive rates and the index figures, as JSON with
# the keys docs/formats.md quotes and as text; a bad option is refused.
source "$(dirname "$0")/common.sh"
BENCH="$MSD_BUILD/app/msd-bench"

fail() {
  echo "FAIL: $1"
  [ -f "${2:-}" ] && cat "$2"
  exit 1
}

"$BENCH" --help | grep -q "compressed" || fail "msd-bench --help does not list compressed"
"$BENCH" compressed --data "$DATA" --variants lz4 >/dev/null 2>&1 && fail "an unknown variant was accepted"

"$BENCH" compressed --data "$DATA" --samples 120 --one-frame-samples 20 --frame-kib 16 --gzip-spacing-kib 16 \
  --json >"$WORK/bench.json" || fail "msd-bench compressed failed"
python3 - "$WORK/bench.json" <<'PY' || fail "the JSON report is incomplete" "$WORK/bench.json"
import json, sys
report = json.load(open(sys.argv[1]))
names = [v["name"] for v in report["variants"]]
assert names == ["plain", "zstd_frames", "gzip", "zstd_one_frame"], names
for v in report["variants"]:
    for key in ("stored_bytes", "compression_ratio", "index_build_s", "index_bytes", "index_bytes_per_mb", "reopen_s",
                "state_bytes", "read_mb_per_s", "read_tokenize_mb_per_s", "read_vs_plain", "read_tokenize_vs_plain",
                "tokens"):
        assert v[key] > 0, (v["name"], key, v[key])
    assert v["mismatched_records"] == 0, v
    assert v["uncompressed_bytes"] == report["variants"][0]["stored_bytes"], v
    assert v["samples"] == (20 if v["name"] == "zstd_one_frame" else 120), v
by_name = {v["name"]: v for v in report["variants"]}
assert by_name["plain"]["restart_points"] == 0
assert by_name["zstd_frames"]["restart_points"] > by_name["zstd_one_frame"]["restart_points"] == by_name["plain"]["files"]
assert by_name["gzip"]["restart_points"] >= by_name["plain"]["files"]
PY

"$BENCH" compressed --data "$DATA" --samples 50 --variants gzip --work-dir "$WORK/kept" >"$WORK/bench.txt" ||
  fail "msd-bench compressed (text) failed"
grep -q "^gzip " "$WORK/bench.txt" || fail "no gzip row" "$WORK/bench.txt"
grep -q "^zstd_frames " "$WORK/bench.txt" && fail "--variants gzip still measured zstd_frames" "$WORK/bench.txt"
ls "$WORK"/kept/gzip/*.jsonl.gz >/dev/null || fail "--work-dir does not hold the compressed copies"
echo "bench_compressed: JSON and text reports complete"
