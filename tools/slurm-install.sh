#!/usr/bin/env bash
# Installs the Debian packages a local Slurm needs (slurmd, slurmctld, the
# client commands, munge; the pmix MPI plugin comes with them), when missing.
# Used by tools/slurm-local.sh and tools/cluster-local.sh. Needs root.
set -euo pipefail
[ "$(id -u)" -eq 0 ] || { echo "slurm-install: run as root" >&2; exit 1; }
missing=()
for p in slurmd slurmctld slurm-client munge; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
((${#missing[@]})) || exit 0
echo "slurm-install: installing ${missing[*]}" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
