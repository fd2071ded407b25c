#!/usr/bin/env bash
# msd-bench handoff at a tiny size: both paths run (the network path only
# when this Open MPI has UCX), the JSON has ratio_vs_memcpy per path, the
# network path reads a batch ahead as msd-run does, and the rates are positive
# numbers.
source "$(dirname "$0")/common.sh"
export MSD_MPIRUN_FLAGS="${MSD_MPIEXEC#* }"  # the test flags without the program
timeout 240 "$MSD_BUILD/app/msd-bench" handoff --seconds 0.05 --scale 0.05 --work-dir "$WORK" --json >"$WORK/out.json"
cat "$WORK/out.json"
/usr/bin/python3 - "$WORK/out.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
paths = report["paths"]
assert paths["shared_memory"]["ran"], paths["shared_memory"]
assert paths["shared_memory"]["access"] == "direct", paths["shared_memory"]  # osc sm offers shared windows
for name, path in paths.items():
    if not path["ran"]:
        print(f"bench_handoff: {name} did not run: {path['error']}")
        continue
    assert path["ratio_vs_memcpy"] > 0, (name, path)
    if name == "network":  # two-sided reads a batch ahead by default, as msd-run's client
        assert path["access"] == "two_sided_pipelined", path
    assert len(path["shapes"]) == 3, path
    assert len(path["nodes"]) == 2 and path["nodes"][0] == path["nodes"][1], path  # one node here
    for shape in path["shapes"]:
        assert shape["get_bytes_per_s"] > 0 and shape["memcpy_bytes_per_s"] > 0, shape
        assert shape["pieces"] > 0 and shape["batch_bytes"] > 0, shape
print("bench_handoff: ok", {k: v.get("ratio_vs_memcpy") for k, v in paths.items()})
PY
# A device that is no interface name is refused before any run.
set +e
"$MSD_BUILD/app/msd-bench" handoff --network-device "lo eth0" --network-only >"$WORK/err" 2>&1
rc=$?
set -e
[ $rc -ne 0 ] && grep -q -- "--network-device" "$WORK/err" || { cat "$WORK/err"; echo "FAIL: a bad --network-device was not refused"; exit 1; }
