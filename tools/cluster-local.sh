#!/usr/bin/env bash
# A two-node Slurm cluster on this one machine, to run jobs that cross nodes
# without a cluster (docs/multi-node.md). Needs root, iproute2 and network
# namespaces.
#   tools/cluster-local.sh start      start it (idempotent: a running cluster is left alone)
#   tools/cluster-local.sh exec CMD.. run CMD on node msd-n1 with SLURM_CONF set
#                                     (sbatch, srun, sinfo: the controller is reachable
#                                     only from inside the nodes' namespaces)
#   tools/cluster-local.sh status     daemons and node states; exit 0 when both nodes take jobs
#   tools/cluster-local.sh stop       end everything and remove it (idempotent)
# The nodes: network namespaces msd-n1 and msd-n2 joined by a veth pair, an
# interface named msd0 in each with 10.213.0.1/24 and 10.213.0.2/24 (these
# addresses exist only inside the namespaces: there is no route out of them).
# Each node's daemons run with the node's name as hostname (own UTS
# namespace). slurmctld and one slurmd run on msd-n1, one slurmd on msd-n2,
# and a munged of the cluster's own serves both through a socket in the file
# system. Everything lives in $MSD_CLUSTER_DIR (default /run/msd-cluster):
# slurm.conf, the munge key, socket and log, the controller's state and log,
# one spool/log/pid directory per node. Own config, ports (6917, 6918) and
# munge socket: a single-node Slurm from tools/slurm-local.sh runs on beside it.
set -euo pipefail
export PATH=$PATH:/usr/sbin:/sbin
dir=${MSD_CLUSTER_DIR:-/run/msd-cluster}
conf=$dir/slurm.conf
nodes=(msd-n1 msd-n2)
addrs=(10.213.0.1 10.213.0.2)
cpus_per_node=16
wait_s=60

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

fail() {
  echo "cluster-local: $*" >&2
  exit 1
}

# in_node NODE CMD...: CMD inside NODE's network namespace with SLURM_CONF set.
in_node() {
  local node=$1
  shift
  nsenter --net="/run/netns/$node" env SLURM_CONF="$conf" "$@"
}

# as_node NODE CMD...: CMD as a daemon of NODE, in NODE's network namespace
# and namespaces of its own: a UTS one whose hostname is the node's name, and
# a mount one where /sys is a sysfs of NODE's network namespace (UCX finds the
# node's interfaces in /sys/class/net), as `ip netns exec` does.
as_node() {
  local node=$1
  shift
  in_node "$node" unshare --uts --mount --propagation private sh -c '
    set -e
    hostname "$0"
    umount -l /sys
    mount -t sysfs sysfs /sys
    exec "$@"' "$node" "$@"
}

node_states() { in_node "${nodes[0]}" timeout 10 sinfo -h -N -o '%N %T' 2>/dev/null; }

usable() {
  local states
  states=$(node_states) || return 1
  for node in "${nodes[@]}"; do
    grep -qE "^$node (idle|mixed|allocated)" <<<"$states" || return 1
  done
}

# pid_of FILE NAME: the pid in FILE if that process is NAME, else nothing.
pid_of() {
  local pid
  pid=$(cat "$1" 2>/dev/null) || return 0
  [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$2" ] && echo "$pid" || true
}

write_config() {
  mkdir -p "$dir/ctld"
  local i
  for i in "${!nodes[@]}"; do mkdir -p "$dir/${nodes[$i]}/spool" "$dir/${nodes[$i]}/tmp"; done
  cat >"$conf" <<CONF
# Written by tools/cluster-local.sh: a two-node cluster on one machine.
ClusterName=msdlocal
SlurmctldHost=${nodes[0]}(${addrs[0]})
SlurmctldPort=6917
SlurmdPort=6918
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/ctld
SlurmctldPidFile=$dir/ctld/slurmctld.pid
SlurmctldLogFile=$dir/ctld/slurmctld.log
SlurmdSpoolDir=$dir/%n/spool
SlurmdPidFile=$dir/%n/slurmd.pid
SlurmdLogFile=$dir/%n/slurmd.log
# The nodes share this machine's /tmp; Slurm's PMIx server keeps per-step
# directories (named by job and step only) under TmpFS, so one per node.
TmpFS=$dir/%n/tmp
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
MailProg=/bin/true
SlurmdParameters=config_overrides
CONF
  # More CPUs than the machine has: the jobs here oversubscribe.
  for i in "${!nodes[@]}"; do
    echo "NodeName=${nodes[$i]} NodeHostname=${nodes[$i]} NodeAddr=${addrs[$i]} CPUs=$cpus_per_node" \
      "Sockets=1 CoresPerSocket=$cpus_per_node ThreadsPerCore=1 State=UNKNOWN" >>"$conf"
  done
  echo "PartitionName=msd Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:64" >>"$conf"
  # No cgroup is used (proctrack/linuxproc, task/none), and the nodes' /sys
  # has no cgroup mounts: the v1 plugin loads without them, Slurm 22.05's
  # default (autodetect) would stop slurmd.
  echo "CgroupPlugin=cgroup/v1" >"$dir/cgroup.conf"
}

start_munge() {
  local m=$dir/munge
  mkdir -p "$m"
  dd if=/dev/urandom bs=1 count=1024 of="$m/munge.key" 2>/dev/null
  chown -R munge:munge "$m"
  chmod 711 "$m"
  chmod 400 "$m/munge.key"
  runuser -u munge -- /usr/sbin/munged --key-file="$m/munge.key" --socket="$m/munge.socket" \
    --pid-file="$m/munged.pid" --log-file="$m/munged.log" --seed-file="$m/munged.seed"
  for _ in $(seq 1 50); do
    munge -n -S "$m/munge.socket" 2>/dev/null | unmunge -S "$m/munge.socket" >/dev/null 2>&1 && return
    sleep 0.2
  done
  fail "munged did not answer on $m/munge.socket (log: $m/munged.log)"
}

# make_network: the namespaces and the veth pair between them; status 1 at
# the first step that fails (errexit does not hold in a caller's `||`).
make_network() {
  local i
  for i in "${!nodes[@]}"; do ip netns add "${nodes[$i]}" || return 1; done
  ip link add msd-v1 type veth peer name msd-v2 || return 1
  for i in "${!nodes[@]}"; do
    ip link set "msd-v$((i + 1))" netns "${nodes[$i]}" &&
      ip -n "${nodes[$i]}" link set "msd-v$((i + 1))" name msd0 &&
      ip -n "${nodes[$i]}" addr add "${addrs[$i]}/24" dev msd0 &&
      ip -n "${nodes[$i]}" link set msd0 up &&
      ip -n "${nodes[$i]}" link set lo up || return 1
  done
}

show_logs() {
  local f
  for f in "$dir/ctld/slurmctld.log" "$dir"/msd-n*/slurmd.log "$dir/munge/munged.log"; do
    [ -f "$f" ] && { echo "--- $f (last lines)"; tail -15 "$f"; }
  done
}

start() {
  [ "$(id -u)" -eq 0 ] || fail "run as root (network namespaces and the Slurm daemons need it)"
  command -v ip >/dev/null || fail "iproute2's ip is missing (apt-get install iproute2)"
  command -v unshare >/dev/null || fail "unshare (util-linux) is missing"
  "$(dirname "$0")/slurm-install.sh"
  if [ -f "$conf" ] && usable; then
    echo "cluster-local: already running"
    node_states
    return
  fi
  stop >/dev/null
  mkdir -p "$dir"
  make_network || { stop >/dev/null; fail "could not create network namespaces and a veth pair here (ip netns add, ip link add type veth)"; }
  write_config
  start_munge
  as_node "${nodes[0]}" /usr/sbin/slurmctld -f "$conf" || start_failed "slurmctld did not start"
  local i
  for i in "${!nodes[@]}"; do
    as_node "${nodes[$i]}" /usr/sbin/slurmd -f "$conf" -N "${nodes[$i]}" || start_failed "slurmd of ${nodes[$i]} did not start"
  done
  local deadline=$((SECONDS + wait_s))
  while ((SECONDS < deadline)); do
    if usable; then
      node_states
      return
    fi
    sleep 1
  done
  node_states || true
  start_failed "the nodes did not become idle within ${wait_s} s"
}

start_failed() {
  show_logs >&2
  fail "$* (logs above; tools/cluster-local.sh stop removes what started)"
}

# stop_pids PIDS...: SIGTERM, up to 10 s to exit, then SIGKILL for what is left.
stop_pids() {
  (($# > 0)) || return 0
  kill -TERM "$@" 2>/dev/null || true
  for _ in $(seq 1 50); do
    local alive=0 pid
    for pid in "$@"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    ((alive)) || return 0
    sleep 0.2
  done
  kill -KILL "$@" 2>/dev/null || true
}

stop() {
  [ "$(id -u)" -eq 0 ] || fail "run as root"
  local node pids
  for node in "${nodes[@]}"; do
    ip netns list 2>/dev/null | grep -qw "^$node" || continue
    # Every process in the namespace is the cluster's: daemons, job steps, tasks.
    mapfile -t pids < <(ip netns pids "$node" 2>/dev/null)
    stop_pids "${pids[@]}"
    ip netns del "$node"
  done
  ip link del msd-v1 2>/dev/null || true
  local munged
  munged=$(pid_of "$dir/munge/munged.pid" munged)
  [ -z "$munged" ] || stop_pids "$munged"
  rm -rf "$dir"
  echo "cluster-local: stopped"
}

status() {
  local node status=0 pid
  for node in "${nodes[@]}"; do
    if ip netns list 2>/dev/null | grep -qw "^$node"; then
      pid=$(pid_of "$dir/$node/slurmd.pid" slurmd)
      echo "$node: namespace up, slurmd ${pid:-not running}"
    else
      echo "$node: no namespace"
      status=1
    fi
  done
  pid=$(pid_of "$dir/ctld/slurmctld.pid" slurmctld)
  echo "slurmctld: ${pid:-not running}"
  pid=$(pid_of "$dir/munge/munged.pid" munged)
  echo "munged: ${pid:-not running}"
  ((status == 0)) && node_states && usable || status=1
  return "$status"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  exec)
    shift
    (($# > 0)) || fail "exec needs a command"
    [ -f "$conf" ] || fail "not started (tools/cluster-local.sh start)"
    in_node "${nodes[0]}" "$@"
    ;;
  -h | --help) usage ;;
  *)
    usage >&2
    exit 2
    ;;
esac
