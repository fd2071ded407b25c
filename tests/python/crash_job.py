"""Consumes or serves a whole msd.Job with the overrides given on the command
line (tests/scripts/python_job.sh runs it with fault.kind = crash): a fatal
error inside msd must end the whole job with one line and exit status 3, not
unwind into Python and leave the peers waiting."""

import sys

from mpi4py import MPI

import msd

job = msd.Job(sys.argv[1], overrides=sys.argv[2:], comm=MPI.COMM_WORLD)
if job.role == "client":
    for batch in job.batches():
        pass
else:
    job.serve()
job.finish()
print("crash_job: the job ended normally", flush=True)
