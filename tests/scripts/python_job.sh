#!/usr/bin/env bash
# The Python package under mpirun: pytest on every rank of a job (1 planner,
# 1 loader, 2 clients) checks msd.Job against msd-run's summary for the same
# configuration (tests/python/test_job.py).
source "$(dirname "$0")/common.sh"
write_tiny_config "$WORK/job.ini"
sed -i -e "s/^loaders = .*/loaders = 1/" "$WORK/job.ini"
run_job "$WORK/job.ini" --summary-json "$WORK/reference.json" >/dev/null
n=$("$MSD_RUN" --config "$WORK/job.ini" --print-world-size)
export PYTHONPATH="$MSD_BUILD/python" MSD_TEST_CONFIG="$WORK/job.ini" MSD_TEST_REFERENCE="$WORK/reference.json"
export MSD_TEST_SCRATCH="$WORK" OMP_NUM_THREADS=1
# shellcheck disable=SC2086
timeout 500 $MSD_MPIEXEC -n "$n" /usr/bin/python3 -m pytest -q --color=no -p no:cacheprovider "$MSD_SOURCE/tests/python/test_job.py"
echo "python_job: msd.Job matches msd-run on $n ranks"
