#!/usr/bin/env bash
# slurm/msd-run.sbatch on a real two-node Slurm cluster on this one machine
# (tools/cluster-local.sh: network namespaces msd-n1 and msd-n2 joined by a
# veth pair, a slurmd in each, srun --mpi=pmix). The job's ranks are split
# over both nodes (planner and loaders on msd-n1, clients on msd-n2), Open MPI
# takes the script's multi-node settings (UCX for messages and MPI_Get) and
# UCX is limited to TCP over the veth interface, so every batch a client reads
# crosses from one node's network stack to the other's. The batch digest must
# equal the single-node mpirun run's, also in tp 2 (TP groups sharing their
# batch through node-shared windows) and when a loader hangs and a shadow
# takes over; a client that throws on the second node ends the whole job with
# status 3 and its line, and the script does not requeue it past
# MSD_MAX_REQUEUES. Skipped (exit MSD_SKIP_CODE, reported as
# skipped) with the reason where it cannot run: not root, no network
# namespaces, Slurm or Open MPI's UCX components missing.
source "$(dirname "$0")/common.sh"
export PATH=$PATH:/usr/sbin:/sbin
skip() {
  echo "slurm_cluster: SKIPPED: $*"
  exit "${MSD_SKIP_CODE:-77}"
}
[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces and the Slurm daemons)"
for tool in ip nsenter unshare flock; do
  command -v "$tool" >/dev/null || skip "$tool is missing"
done
for daemon in slurmd slurmctld munged; do
  [ -x "/usr/sbin/$daemon" ] || skip "Slurm is not installed (/usr/sbin/$daemon; tools/slurm-install.sh installs it)"
done
command -v sbatch >/dev/null || skip "Slurm's client commands are not installed (tools/slurm-install.sh installs them)"
if ! ompi_info 2>/dev/null | grep -q "MCA osc: ucx" || ! ompi_info 2>/dev/null | grep -q "MCA pml: ucx"; then
  skip "this Open MPI has no UCX pml/osc components (ompi_info | grep -i ucx)"
fi
probe=msd-probe-$$
ip netns add "$probe" 2>/dev/null || skip "cannot create network namespaces here (ip netns add)"
veth=0
ip -n "$probe" link add probe0 type veth peer name probe1 2>/dev/null && veth=1
ip netns del "$probe"
((veth)) || skip "cannot create a veth pair here (ip link add type veth)"
unshare --uts --mount --propagation private true 2>/dev/null || skip "cannot create UTS and mount namespaces here (unshare)"

# One cluster per machine (fixed namespace names): runs of this test from
# several build trees take turns.
exec 9>/run/lock/msd-cluster.lock
flock -w 150 9 || { echo "FAIL: another run held the local cluster for 150 s"; exit 1; }
cluster="$MSD_SOURCE/tools/cluster-local.sh"
cluster_dir=${MSD_CLUSTER_DIR:-/run/msd-cluster}
if "$cluster" status >/dev/null 2>&1; then
  echo "slurm_cluster: using the local cluster already running (left running)"
else
  trap '"$cluster" stop >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT
  timeout 90 "$cluster" start >"$WORK/start.out" 2>&1 ||
    { cat "$WORK/start.out"; echo "FAIL: tools/cluster-local.sh start failed"; exit 1; }
fi

write_tiny_config "$WORK/job.ini"
sed -i 's/^steps = 8/steps = 24/' "$WORK/job.ini"
run_job "$WORK/job.ini" --summary-json "$WORK/one-node.json" >"$WORK/one-node.out" 2>&1 ||
  { tail -20 "$WORK/one-node.out"; echo "FAIL: the one-node run failed"; exit 1; }
want=$(json_field "$WORK/one-node.json" batch_digest)

# submit NAME [msd-run options]: runs the job through the sbatch script over
# both nodes, world ranks 0..first-1 (planner, loaders) on msd-n1 and the
# rest on msd-n2 (block distribution; srun warns that it cannot honour the
# per-node count for the last node, which is expected). Sets rc (sbatch's
# status: the job's), job, n, first and seconds (the job's run time as
# Slurm recorded it, whole seconds: sbatch --wait itself polls every few).
submit() {
  local name=$1
  shift
  n=$("$MSD_RUN" --config "$WORK/job.ini" --print-world-size "$@")
  first=$(((n + 1) / 2))
  set +e
  "$cluster" exec env MSD_BUILD="$MSD_BUILD" MSD_CONFIG="$WORK/job.ini" MSD_MAX_REQUEUES=0 \
    UCX_TLS=tcp,self UCX_NET_DEVICES=msd0 UCX_WARN_UNUSED_ENV_VARS=n \
    timeout 120 sbatch --parsable --wait --time=2 --nodes=2 --ntasks="$n" --ntasks-per-node="$first" \
    --output="$WORK/$name-%j.out" "$MSD_SOURCE/slurm/msd-run.sbatch" --summary-json "$WORK/$name.json" "$@" \
    >"$WORK/$name.sbatch" 2>&1
  rc=$?
  set -e
  job=$(grep -oE '^[0-9]+' "$WORK/$name.sbatch" | head -1)
  seconds=$("$cluster" exec scontrol show job "$job" 2>/dev/null | grep -oE 'RunTime=[0-9:-]+' | head -1 |
    awk -F'[=:]' '{ print $2 * 3600 + $3 * 60 + $4 }')
  [ "$rc" != 124 ] || { cat "$WORK/$name".*; echo "FAIL: $name: the two-node job hung"; exit 1; }
}

# fail NAME WHY: the job's output, the nodes' slurmd logs and the reason.
fail() {
  cat "$WORK/$1.sbatch" "$WORK/$1"-*.out 2>/dev/null || true
  for log in "$cluster_dir"/msd-n*/slurmd.log; do echo "--- $log"; tail -20 "$log"; done
  echo "FAIL: $1: $2"
  exit 1
}

submit clean
[ $rc -eq 0 ] || fail clean "the two-node job failed (sbatch status $rc)"
for node in msd-n1 msd-n2; do
  grep -q "launch task StepId=$job.0 " "$cluster_dir/$node/slurmd.log" || fail clean "job $job ran no task on $node"
done
got=$(json_field "$WORK/clean.json" batch_digest)
[ "$want" = "$got" ] || fail clean "two nodes delivered batch_digest $got, one node $want"
echo "slurm_cluster: job $job, $n ranks over msd-n1 ($first) and msd-n2 ($((n - first))), UCX over TCP between" \
  "the nodes: batch_digest $got as on one node (${seconds}s)"

# TP groups on msd-n2 (planner and three loaders fill msd-n1): each leader
# reads its group's batch over the network (osc ucx) and shares it with its
# follower through a node-shared window (osc sm), as on a real cluster.
tp=(--topology.tp=2 --topology.loaders=3)
run_job "$WORK/job.ini" "${tp[@]}" --summary-json "$WORK/tp-one-node.json" >"$WORK/tp-one-node.out" 2>&1 ||
  { tail -20 "$WORK/tp-one-node.out"; echo "FAIL: the one-node run in tp 2 failed"; exit 1; }
submit tp "${tp[@]}"
[ $rc -eq 0 ] || fail tp "the two-node job in tp 2 failed (sbatch status $rc)"
got=$(json_field "$WORK/tp.json" batch_digest)
[ "$(json_field "$WORK/tp-one-node.json" batch_digest)" = "$got" ] || fail tp "tp 2 over two nodes: batch_digest $got"
echo "slurm_cluster: tp 2, the TP groups on msd-n2 sharing through node-shared windows: the one-node digest (${seconds}s)"

# The handoff bench's network path across the nodes (docs/multi-node.md):
# mpirun under a two-node allocation puts the loader on msd-n1 and the
# client on msd-n2, which read over msd0; tiny, so it only proves the
# command works there.
timeout 120 "$cluster" exec salloc -N2 -n2 --ntasks-per-node=1 "$MSD_BUILD/app/msd-bench" handoff --network-only \
  --network-device msd0 --seconds 0.05 --scale 0.05 --work-dir "$WORK" --json >"$WORK/handoff.json" 2>"$WORK/handoff.err" ||
  { cat "$WORK/handoff.err" "$WORK"/handoff-network.log; echo "FAIL: msd-bench handoff across the nodes failed"; exit 1; }
/usr/bin/python3 - "$WORK/handoff.json" <<'PY' || exit 1
import json, sys
path = json.load(open(sys.argv[1]))["paths"]["network"]
assert path["ran"] and path["nodes"] == ["msd-n1", "msd-n2"], path
assert "UCX_NET_DEVICES=msd0" in path["mpirun_flags"] and path["ratio_vs_two_sided"] > 0, path
print("slurm_cluster: msd-bench handoff, loader on msd-n1 and client on msd-n2: ratio_vs_two_sided %.2f"
      % path["ratio_vs_two_sided"])
PY

# A loader that hangs mid-run: the shadow on msd-n1 takes over and the
# clients on msd-n2 read its window over the network; the stream is unchanged.
submit takeover --topology.shadow_loaders=1 --fault.loader=0 --fault.kind=hang --fault.step=5 --loader.deadline_ms=500
[ $rc -eq 0 ] || fail takeover "the job failed (sbatch status $rc)"
got=$(json_field "$WORK/takeover.json" batch_digest)
[ "$want" = "$got" ] || fail takeover "batch_digest $got after the takeover, $want without a fault"
[ "$(json_field "$WORK/takeover.json" takeover_count)" = 1 ] || fail takeover "expected one takeover"
echo "slurm_cluster: a loader hung at step 5: taken over across the nodes, status 0, the same digest (${seconds}s)"

# A client on msd-n2 that throws mid-run: the whole job, on both nodes,
# ends with status 3 and one line naming the rank and role; with
# MSD_MAX_REQUEUES=0 the script does not requeue it.
victim=$(($("$MSD_RUN" --config "$WORK/job.ini" --print-world-size) - 1))
submit crash --fault.kind=crash --fault.rank=$victim --fault.step=5
[ $rc -eq 3 ] || fail crash "sbatch status $rc, expected 3"
line=$(grep -h "fatal on world rank $victim: injected crash" "$WORK"/crash-*.out | head -1)
[ -n "$line" ] || fail crash "no line naming world rank $victim and its cause"
grep -q "not requeued again (MSD_MAX_REQUEUES=0)" "$WORK"/crash-*.out || fail crash "the script did not say it leaves the job"
echo "slurm_cluster: a client on msd-n2 crashed at step 5: status 3, the job ran ${seconds}s: $line"
