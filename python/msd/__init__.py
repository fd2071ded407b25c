"""msd for PyTorch: a training script's batches as torch tensors.

    from mpi4py import MPI
    import msd
    job = msd.Job("configs/train-demo.ini", overrides=["--job.steps=40"])
    if job.role == "client":
        job.load_state_dict(checkpoint["data"])   # optional, before the first batch
        for batch in job.batches():
            for mb in batch.micro_batches:
                loss = model(mb.tokens, mb.positions, mb.cu_seqlens, mb.labels)
            ...                                     # all-reduce gradients over job.dp
    else:
        job.serve()
    summary = job.finish()

docs/python.md is the whole contract.
"""

from ._msd import ConfigError, Error, digest
from .job import Batch, Job, MicroBatch, UsageError
from .tensors import BatchTensor, StaleBatchError

__all__ = ["Batch", "BatchTensor", "ConfigError", "Error", "Job", "MicroBatch", "StaleBatchError", "UsageError",
           "digest"]
