#!/usr/bin/env bash
# Installs the Debian packages msd needs, when they are missing. Idempotent and
# quiet when there is nothing to do.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  openmpi-bin libopenmpi-dev
  libhdf5-openmpi-dev hdf5-tools
  libboost-program-options-dev
  libturbojpeg0-dev libjpeg-turbo-progs
  libicu-dev
  libzstd-dev zlib1g-dev zstd  # compressed JSON lines; the zstd and pzstd tools for their tests
  libsnappy-dev  # Parquet pages compressed with snappy
  catch2
  python3-matplotlib  # msd-bench sweep --plot (tools/plot_sweep.py), tools/plot-metrics
  # The Python package (python/, examples/, tests/python/).
  python3-dev pybind11-dev python3-numpy python3-torch python3-mpi4py python3-pytest
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
