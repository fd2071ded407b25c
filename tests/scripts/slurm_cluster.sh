#!/usr/bin/env bash
# slurm/msd-run.sbatch on a real two-node Slurm cluster on this one machine
# (tools/cluster-local.sh: network namespaces msd-n1 and msd-n2 joined by a
# veth pair, a slurmd in each, srun --mpi=pmix). The job's ranks are split
# over both nodes (planner and loaders on msd-n1, clients on msd-n2), Open MPI
# takes the script's multi-node settings (UCX for messages and MPI_Get) and
# UCX is limited to TCP over the veth interface, so every batch a client reads
# crosses from one node's network stack to the other's. The batch digest must
# equal the single-node mpirun run's. Skipped (exit MSD_SKIP_CODE, reported as
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
run_job "$WORK/job.ini" --summary-json "$WORK/one-node.json" >/dev/null
n=$("$MSD_RUN" --config "$WORK/job.ini" --print-world-size)
first=$(((n + 1) / 2))
# World ranks 0..first-1 (planner, loaders) on msd-n1, the rest on msd-n2
# (block distribution; srun warns that it cannot honour the per-node count
# for the last node, which is expected).
set +e
"$cluster" exec env MSD_BUILD="$MSD_BUILD" MSD_CONFIG="$WORK/job.ini" \
  UCX_TLS=tcp,self UCX_NET_DEVICES=msd0 UCX_WARN_UNUSED_ENV_VARS=n \
  timeout 120 sbatch --parsable --wait --time=2 --nodes=2 --ntasks="$n" --ntasks-per-node="$first" \
  --output="$WORK/job-%j.out" "$MSD_SOURCE/slurm/msd-run.sbatch" --summary-json "$WORK/two-nodes.json" \
  >"$WORK/sbatch.out" 2>&1
rc=$?
set -e
job=$(grep -oE '^[0-9]+' "$WORK/sbatch.out" | head -1)
if [ $rc -ne 0 ]; then
  cat "$WORK/sbatch.out" "$WORK"/job-*.out 2>/dev/null || true
  for log in "$cluster_dir"/msd-n*/slurmd.log; do echo "--- $log"; tail -20 "$log"; done
  echo "FAIL: the two-node job failed (sbatch status $rc)"
  exit 1
fi
for node in msd-n1 msd-n2; do
  grep -q "launch task StepId=$job.0 " "$cluster_dir/$node/slurmd.log" ||
    { cat "$WORK"/job-*.out; echo "FAIL: job $job ran no task on $node"; exit 1; }
done
want=$(json_field "$WORK/one-node.json" batch_digest)
got=$(json_field "$WORK/two-nodes.json" batch_digest)
[ -n "$want" ] && [ "$want" = "$got" ] ||
  { cat "$WORK"/job-*.out; echo "FAIL: two nodes delivered batch_digest $got, one node $want"; exit 1; }
echo "slurm_cluster: job $job, $n ranks over msd-n1 ($first) and msd-n2 ($((n - first))), UCX over TCP between" \
  "the nodes: batch_digest $got as on one node"
