#!/usr/bin/env bash
# Sets up and starts a single-node Slurm (munge, slurmctld, slurmd; no
# systemd) on this machine, to try slurm/msd-run.sbatch without a cluster:
#   tools/slurm-local.sh && sbatch --ntasks=7 slurm/msd-run.sbatch
# Idempotent: daemons already running are left alone. Needs root.
set -euo pipefail
[ "$(id -u)" -eq 0 ] || { echo "slurm-local: run as root" >&2; exit 1; }
missing=()
for p in slurmd slurmctld slurm-client munge; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
host=$(hostname)
mkdir -p /etc/slurm /var/spool/slurmd /var/spool/slurmctld /var/log/slurm /run/munge
if [ ! -f /etc/slurm/slurm.conf ]; then
  # Advertise more CPUs than the machine has: MPI jobs here oversubscribe.
  cat >/etc/slurm/slurm.conf <<CONF
ClusterName=local
SlurmctldHost=$host
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
SlurmdParameters=config_overrides
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
NodeName=$host CPUs=64 Sockets=1 CoresPerSocket=64 ThreadsPerCore=1 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:64
CONF
fi
[ -f /etc/munge/munge.key ] || dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null
chown munge:munge /etc/munge/munge.key /run/munge
chmod 400 /etc/munge/munge.key
pgrep -x munged >/dev/null || runuser -u munge -- /usr/sbin/munged
pgrep -x slurmctld >/dev/null || /usr/sbin/slurmctld
pgrep -x slurmd >/dev/null || /usr/sbin/slurmd
for _ in $(seq 1 30); do
  sinfo -h -o %T 2>/dev/null | grep -q idle && break
  scontrol update nodename="$host" state=resume >/dev/null 2>&1 || true
  sleep 1
done
sinfo
