#!/usr/bin/env bash
# Sets up and starts a single-node Slurm (munge, slurmctld, slurmd; no
# systemd) on this machine, to try slurm/msd-run.sbatch without a cluster:
#   tools/slurm-local.sh && sbatch --ntasks=7 slurm/msd-run.sbatch
# Idempotent: daemons already running are left alone. Needs root. Exits 0
# once the node takes jobs; otherwise 1, with the daemons' log lines.
# tools/cluster-local.sh starts a two-node cluster instead.
set -euo pipefail
[ "$(id -u)" -eq 0 ] || { echo "slurm-local: run as root" >&2; exit 1; }
"$(dirname "$0")/slurm-install.sh"
# The node's name and address are given, not looked up: a host name that
# does not resolve, or resolves elsewhere, must not keep the node down.
node=$(hostname -s)
mkdir -p /etc/slurm /var/spool/slurmd /var/spool/slurmctld /var/log/slurm /run/munge
if [ ! -f /etc/slurm/slurm.conf ]; then
  # Advertise more CPUs than the machine has: MPI jobs here oversubscribe.
  cat >/etc/slurm/slurm.conf <<CONF
# Written by tools/slurm-local.sh: a single-node Slurm on this machine.
ClusterName=local
SlurmctldHost=$node(127.0.0.1)
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
MailProg=/bin/true
SlurmdParameters=config_overrides
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
NodeName=$node NodeAddr=127.0.0.1 CPUs=64 Sockets=1 CoresPerSocket=64 ThreadsPerCore=1 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:64
CONF
fi
node=$(sed -n 's/^NodeName=\([^ ]*\).*/\1/p' /etc/slurm/slurm.conf | head -1)
# Slurm 22.05's default (CgroupPlugin=autodetect) makes slurmd exit at start
# where /sys/fs/cgroup holds no cgroup file system ("No filesystem mounted on
# /sys/fs/cgroup") or cgroup v2 while the process also sits in v1 hierarchies
# ("Hybrid mode is not supported"). This setup uses no cgroup
# (proctrack/linuxproc, task/none), and the v1 plugin loads without touching
# the file system.
if [ ! -f /etc/slurm/cgroup.conf ] && grep -q '^ProctrackType=proctrack/linuxproc' /etc/slurm/slurm.conf &&
  grep -q '^TaskPlugin=task/none' /etc/slurm/slurm.conf; then
  echo "CgroupPlugin=cgroup/v1" >/etc/slurm/cgroup.conf
fi
[ -f /etc/munge/munge.key ] || dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null
chown munge:munge /etc/munge/munge.key /run/munge
chmod 400 /etc/munge/munge.key

show_logs() {
  local f
  for f in /var/log/munge/munged.log /var/log/slurm/slurmctld.log /var/log/slurm/slurmd.log; do
    [ -f "$f" ] && { echo "--- $f (last lines)"; tail -15 "$f"; }
  done
}
fail() {
  show_logs >&2
  echo "slurm-local: $*" >&2
  exit 1
}
usable() { timeout 10 sinfo -h -o %T 2>/dev/null | grep -qE 'idle|mix|alloc'; }
# running NAME: the pid of this setup's daemon NAME, from its default pid
# file (other daemons of the same name, e.g. tools/cluster-local.sh's, are
# not this one's).
running() {
  local file=/run/$1.pid pid
  [ "$1" = munged ] && file=/run/munge/munged.pid
  pid=$(cat "$file" 2>/dev/null) && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$1" ] && echo "$pid"
}
running munged >/dev/null || runuser -u munge -- /usr/sbin/munged || fail "munged did not start"
running slurmctld >/dev/null || /usr/sbin/slurmctld || fail "slurmctld did not start"
for _ in $(seq 1 20); do
  timeout 10 scontrol ping 2>/dev/null | grep -q UP && break
  sleep 0.5
done
timeout 10 scontrol ping 2>/dev/null | grep -q UP || fail "slurmctld does not answer"
# A slurmd that found no controller retries registering ever more slowly
# (minutes apart): restart one whose node does not take jobs.
if pid=$(running slurmd) && ! usable; then
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
fi
running slurmd >/dev/null || /usr/sbin/slurmd -N "$node" || fail "slurmd did not start"
# Bounded by the clock: a client that finds no controller retries for ~10 s.
deadline=$((SECONDS + 30))
while ((SECONDS < deadline)); do
  running slurmctld >/dev/null || fail "slurmctld exited"
  running slurmd >/dev/null || fail "slurmd exited"
  if usable; then
    sinfo
    exit 0
  fi
  timeout 10 scontrol update nodename="$node" state=resume >/dev/null 2>&1 || true
  sleep 1
done
timeout 10 sinfo -o '%N %T %E' >&2 || true
fail "node $node does not take jobs after 30 s"
