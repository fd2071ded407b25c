# msd.Job(device=...) in one process, without mpirun: a device that cannot be
# used fails before any work (tests/python/test_device.py).
source "$(dirname "$0")/common.sh"
PYTHONPATH="$MSD_BUILD/python" OMP_NUM_THREADS=1 timeout 120 /usr/bin/python3 -m pytest -q --color=no \
  -p no:cacheprovider "$MSD_SOURCE/tests/python/test_device.py"
