"""A training script's own faults over msd.Job (tests/scripts/trainer_faults.sh
runs it with plain python3 and with python3 -m mpi4py):

    fault_job.py MODE RANK STEP CONFIG [msd-run options...]

MODE raise:      world rank RANK raises ValueError at step STEP, uncaught, with
                 no `with` block (the excepthook ends the job); its DP peers
                 wait for it in their gradient all-reduce.
     raise_with: the same inside `with msd.Job(...) as job:`.
     exit_with:  world rank RANK calls sys.exit(3) at step STEP inside `with`.
     early:      every client leaves the loop after step STEP; `with` finishes.
     early_one:  client world rank RANK leaves after step STEP, the others go on.
     no_finish:  every rank consumes or serves the whole stream and never calls
                 finish(): msd finishes the job at exit.
Before a fault (finishing early) a rank prints "fault_job: fault at
UNIX_SECONDS" ("finish at") on stderr;
world rank 0 prints the summary as one JSON line on stdout when the job ends
cleanly.
"""

import json
import sys
import time

from mpi4py import MPI

import msd

mode, rank, step, config = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
overrides = sys.argv[5:]
WORLD = MPI.COMM_WORLD
faulty = mode in ("raise", "raise_with", "exit_with")


def fault():
    print(f"fault_job: fault at {time.time():.3f}", file=sys.stderr, flush=True)
    if mode == "exit_with":
        sys.exit(3)
    raise ValueError(f"the loss is NaN at step {step}")


def train(job):
    if job.role != "client":
        job.serve()
        return
    for batch in job.batches():
        if faulty and WORLD.rank == rank and batch.step == step:
            fault()
        if faulty:
            job.dp.allreduce(1.0)  # a gradient all-reduce: the peers wait for each other
        stops = mode == "early" or (mode == "early_one" and WORLD.rank == rank)
        if stops and batch.step == step:
            print(f"fault_job: finish at {time.time():.3f}", file=sys.stderr, flush=True)
            break


def report(summary):
    if WORLD.rank == 0:
        print(json.dumps({key: summary[key] for key in ("steps", "first_step", "stopped_early", "batch_digest")},
                         separators=(",", ":")),
              flush=True)


if mode in ("raise_with", "exit_with", "early", "early_one"):
    with msd.Job(config, overrides=overrides) as job:
        train(job)
    report(job.finish())  # the summary of the finished job, again
elif mode == "no_finish":
    job = msd.Job(config, overrides=overrides)
    train(job)  # finish() is left to msd at exit; the summary goes to --summary-json
else:
    job = msd.Job(config, overrides=overrides)
    train(job)
    report(job.finish())
