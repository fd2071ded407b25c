"""msd.Job: msd's data path for a PyTorch training script (docs/python.md)."""

import atexit
import json
import os
import signal
import sys
import time
import traceback
import weakref

from . import _msd
from .tensors import Lease, leased_view

FIELDS = ("tokens", "labels", "positions", "loss_mask", "cu_seqlens", "patches", "patch_positions")
INPUTS = ("tokens", "positions", "patches", "patch_positions")  # first pipeline stage
TARGETS = ("labels", "loss_mask")  # last pipeline stage
STATE_VERSION = 1


class UsageError(RuntimeError):
    """An msd.Job method called where it cannot work (wrong role, wrong order)."""


class MicroBatch:
    """One micro-batch of a step: torch tensors viewing msd's buffers.

    tokens, labels, positions, loss_mask: [sequences, seq_len // cp_size]
    (int32, loss_mask uint8); cu_seqlens: int32 segment boundaries over the
    flattened whole sequences (with cp_by_segment, each document piece split
    over the CP ranks on its own: Transformer Engine's THD layout, and
    cu_seqlens its cu_seqlens_padded); patches: uint8 [n, patch, patch, 3];
    patch_positions: int32 [n]. A pipeline stage that does not hold inputs
    (or targets) has None there. docs/batch.md says what each holds.
    """

    def __init__(self, info, tensors, lease):
        self.__dict__.update(info)  # sequences, seq_len, cp_rank, cp_size, cp_by_segment, has_inputs, has_targets
        self._tensors = tensors
        self._lease = lease

    def __getattr__(self, name):
        tensors = self.__dict__.get("_tensors", {})
        if name not in tensors:
            raise AttributeError(name)
        self._lease.check()
        return tensors[name]

    def as_dict(self):
        self._lease.check()
        return dict(self._tensors)


class Batch:
    """One step: ``step``, ``digest`` (msd's 64-bit digest of the step on this
    rank), ``micro_batches`` (``job.micro_batches`` of them, or with
    ``job.micro_batch_count = variable`` as many as this rank's share needs)
    and ``global_loss_tokens``: the step's labelled positions (loss_mask
    ones) over every data-parallel rank, to normalize the loss by (divide
    each rank's summed token losses by it, then sum the gradients); 0 when
    not known (``job.mode = colocated_samples``). Valid until the next step
    is requested."""

    def __init__(self, step, digest, micro_batches, lease, global_loss_tokens=0):
        self.step = step
        self.digest = digest
        self.global_loss_tokens = global_loss_tokens
        self._micro_batches = micro_batches
        self._lease = lease

    @property
    def micro_batches(self):
        self._lease.check()
        return self._micro_batches

    def __len__(self):
        return len(self._micro_batches)

    def __iter__(self):
        return iter(self.micro_batches)

    def __getitem__(self, index):
        return self.micro_batches[index]


def _mpi():
    from mpi4py import MPI  # initializes MPI on first import
    return MPI


# --- the trainer's faults (docs/python.md "Errors") ---------------------------
# An exception the script does not catch, or one leaving `with msd.Job(...)`,
# ends the whole job at once with one line naming this rank, its role and the
# exception, before the interpreter's exit could enter a collective (freeing
# msd's windows, MPI_Finalize) that peers still streaming never join. Exit
# status: 2 for msd.ConfigError, 3 for another msd.Error, 5 for the
# trainer's own exception (deterministic: never requeued), 130 for Ctrl-C.

_open_jobs = weakref.WeakSet()  # constructed and not yet finished


def _exception_text(error, where=""):
    """'ValueError at step 5: the message', on one line."""
    kind = type(error)
    name = kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
    message = "; ".join(line.strip() for line in str(error).splitlines() if line.strip())
    return f"{name}{where}: {message}" if message else f"{name}{where}"


def _abort_for(error):
    """Ends the whole job for `error`, if MPI is up and msd has something open
    (or the error is msd's own); returns otherwise."""
    MPI = sys.modules.get("mpi4py.MPI")
    if MPI is None or not MPI.Is_initialized() or MPI.Is_finalized():
        return
    if isinstance(error, _msd.ConfigError):
        _msd.abort("config", str(error))
    if isinstance(error, _msd.Error):
        _msd.abort("msd", str(error))
    jobs = list(_open_jobs)
    if not jobs:
        return  # nothing of msd's is running: Python's own exit
    if isinstance(error, KeyboardInterrupt):
        _msd.end_by_signal(signal.SIGINT)
    steps = [job._next_step - 1 for job in jobs if job._delivered > 0]
    where = f" at step {steps[0]}" if steps else ""
    _msd.abort("trainer", f"the trainer raised {_exception_text(error, where)}")


def _excepthook(kind, error, tb, previous=sys.excepthook):
    previous(kind, error, tb)  # the traceback first, so that the job's last lines hold it
    _abort_for(error)


def _finish_at_exit():
    """A script that ends without finish() (every rank, or some): msd finishes
    the job, so that it ends cleanly and its summary is written."""
    for job in list(_open_jobs):
        print(f"msd: world rank {job.world_rank} ({job.role}): finish() was not called before the interpreter "
              f"exits; finishing the job now", file=sys.stderr, flush=True)
        job.finish()


sys.excepthook = _excepthook
atexit.register(_finish_at_exit)


def _check_device(device):
    """`device` as "cpu" or "cuda[:N]"; ConfigError naming the option when it
    cannot be used here."""
    text = str(device)
    if text == "cpu":
        return text
    if not (text == "cuda" or (text.startswith("cuda:") and text[5:].isdigit())):
        raise _msd.ConfigError(f"msd.Job(device={device!r}): device is 'cpu' or 'cuda' (or 'cuda:N')")
    try:
        import torch
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    except ImportError:
        count = 0
    if count == 0:
        raise _msd.ConfigError(f"msd.Job(device={device!r}): no CUDA device is visible to PyTorch on this rank "
                               f"(torch.cuda.is_available() is False); use device='cpu', the default")
    index = int(text[5:]) if ":" in text else 0
    if index >= count:
        raise _msd.ConfigError(f"msd.Job(device={device!r}): this rank sees {count} CUDA device(s)")
    return text


class Job:
    """msd's job over an MPI communicator: planner, loader and client ranks.

    Collective over ``comm`` (default MPI.COMM_WORLD), like msd::Job: every
    rank constructs it with the same configuration. ``config`` is an INI file
    (or None), ``overrides`` msd-run style options (``"--job.steps=40"``,
    ``"--seed=3"``). Throws msd.ConfigError on every rank for a bad
    configuration or a world of the wrong size.

    Best used as a context manager: ``with msd.Job(...) as job:`` finishes
    the job when the block ends (early too: every client then stops at the
    same step) and ends the whole job at once when an exception leaves it.

    The stream starts late, at the first ``batches()``/``next()`` on client
    ranks and ``serve()`` on the others, so that ``load_state_dict`` can come
    after construction (the PyTorch order) and every rank agrees on the step
    the stream continues from.

    ``device``: where a client's tensors live. ``"cpu"`` (the default):
    views of msd's host buffers, valid for one step. ``"cuda"`` (or
    ``"cuda:N"``): CUDA tensors, copied from pinned memory on a stream of
    their own (the current stream waits for the copy), owned by the trainer
    and valid as long as it keeps them. Without a CUDA device ``"cuda"``
    raises msd.ConfigError on every rank before any work (docs/gpu.md).
    """

    def __init__(self, config, overrides=(), comm=None, device="cpu"):
        self._device = _check_device(device)  # before any work: no MPI, no job
        MPI = _mpi()
        self._comm = MPI.COMM_WORLD if comm is None else comm
        argv = ["msd"] + (["--config", os.fspath(config)] if config is not None else []) + list(overrides)
        self._impl = _msd.Job(argv, self._comm.py2f())
        # Kept here: they stay readable after finish() closes the C++ job.
        self._role, self._world_rank = self._impl.role, self._impl.world_rank
        self._steps, self._seed = self._impl.steps, self._impl.seed
        self._client_index = self._impl.client_index
        self._resume_step = None
        self._next_step = 0
        self._lease = None
        self._delivered = 0
        self._first_batch_time = None
        self._wait_seconds = 0.0
        self._summary = None
        self._start_error = None  # a start-up every rank failed alike
        _open_jobs.add(self)

    def __enter__(self):
        return self

    def __exit__(self, kind, error, tb):
        if error is None or (isinstance(error, SystemExit) and error.code in (None, 0)):
            self.finish()
            return False
        if isinstance(error, SystemExit):  # the script's own status: kept
            status = error.code if isinstance(error.code, int) else 1
            _msd.abort("exit", f"the script exited with status {status} inside `with msd.Job(...)`", status)
        traceback.print_exception(kind, error, tb)
        _abort_for(error)
        return False

    # --- who this rank is --------------------------------------------------
    @property
    def role(self):
        """'planner', 'loader' or 'client'."""
        return self._role

    @property
    def world_rank(self):
        return self._world_rank

    @property
    def client_index(self):
        """This client's index among the client ranks (the rank in `clients`); -1 elsewhere."""
        return self._client_index

    @property
    def steps(self):
        """job.steps: the steps of the whole stream."""
        return self._steps

    def _comm_of(self, name):
        MPI = _mpi()
        return MPI.Intracomm(MPI.Comm.f2py(self._impl.comm(name)))

    # Trainer communicators (mpi4py) on client ranks, MPI.COMM_NULL elsewhere;
    # msd owns them: valid until finish(), do not Free() them.
    dp = property(lambda self: self._comm_of("dp"), doc="data-parallel peers")
    tp = property(lambda self: self._comm_of("tp"), doc="tensor-parallel peers")
    cp = property(lambda self: self._comm_of("cp"), doc="context-parallel peers")
    pp = property(lambda self: self._comm_of("pp"), doc="pipeline stages")
    clients = property(lambda self: self._comm_of("clients"), doc="every client rank: the trainer's world")

    # --- the stream --------------------------------------------------------
    def _start(self):
        if not self._impl.started:
            try:
                self._impl.start(self._resume_step)
            except _msd.ConfigError as e:
                # Raised on every rank alike (msd agreed on it): nothing runs.
                self._start_error = e
                _open_jobs.discard(self)
                raise
            self._next_step = self._resume_step or 0

    def _require_client(self, what):
        if self.role != "client":
            raise UsageError(f"{what} on a {self.role} rank: only client ranks receive batches; "
                             f"planner and loader ranks call job.serve()")

    def serve(self):
        """Planner and loader ranks: serve until the stream ends."""
        if self.role == "client":
            raise UsageError("serve() on a client rank: client ranks iterate over job.batches()")
        self._start()
        self._impl.serve()

    def _end_lease(self, why):
        if self._lease is not None:
            self._lease.end(why)
            self._lease = None

    def next_batch(self):
        """The next step's Batch, or None after the last step. Ends the
        previous step's tensors (see msd.StaleBatchError)."""
        self._require_client("next()")
        self._start()
        self._end_lease(f"step {self._next_step} was requested")
        begin = time.perf_counter()
        if self._first_batch_time is None:
            self._first_batch_time = begin
        if not self._impl.next():
            return None
        self._wait_seconds += time.perf_counter() - begin
        return self._current_batch()

    def _current_batch(self):
        impl = self._impl
        infos = [impl.micro_info(i) for i in range(impl.micro_batches)]
        arrays = [{name: impl.field(i, name) for name in FIELDS} for i in range(len(infos))]
        if self._device != "cpu":
            return self._device_batch(infos, arrays)
        ranges = [(a.ctypes.data, a.ctypes.data + a.nbytes) for fields in arrays for a in fields.values() if a.nbytes]
        lease = Lease(impl.step, ranges)
        micro_batches = []
        for info, fields in zip(infos, arrays):
            held = {name: (info["has_inputs"] if name in INPUTS else info["has_targets"] if name in TARGETS else True)
                    for name in FIELDS}
            tensors = {name: leased_view(a, lease) if held[name] else None for name, a in fields.items()}
            micro_batches.append(MicroBatch(info, tensors, lease))
        self._lease = lease
        self._delivered += 1
        self._next_step = impl.step + 1
        return Batch(impl.step, impl.digest, micro_batches, lease, impl.global_loss_tokens)

    def _device_batch(self, infos, arrays):
        """The step's fields as CUDA tensors: pinned copies of msd's host
        buffers, sent with non_blocking copies on a copy stream that the
        current stream then waits on, so that the copy overlaps the compute
        already enqueued (docs/gpu.md)."""
        import torch
        device = torch.device(self._device)
        if getattr(self, "_copy_stream", None) is None:
            self._copy_stream = torch.cuda.Stream(device=device)
        current = torch.cuda.current_stream(device)
        lease = Lease(self._impl.step, [])  # the trainer owns CUDA tensors: nothing to end
        micro_batches = []
        with torch.cuda.stream(self._copy_stream):
            for info, fields in zip(infos, arrays):
                tensors = {}
                for name, a in fields.items():
                    held = info["has_inputs"] if name in INPUTS else info["has_targets"] if name in TARGETS else True
                    if not held:
                        tensors[name] = None
                        continue
                    t = torch.from_numpy(a).pin_memory().to(device, non_blocking=True)
                    t.record_stream(current)  # freed only after the trainer's work on it
                    tensors[name] = t
                micro_batches.append(MicroBatch(info, tensors, lease))
        current.wait_stream(self._copy_stream)
        self._delivered += 1
        self._next_step = self._impl.step + 1
        return Batch(self._impl.step, self._impl.digest, micro_batches, lease, self._impl.global_loss_tokens)

    def batches(self):
        """An iterator over the remaining steps (client ranks)."""
        self._require_client("batches()")
        return iter(self)

    def __iter__(self):
        self._require_client("iterating a Job")
        return self

    def __next__(self):
        batch = self.next_batch()
        if batch is None:
            raise StopIteration
        return batch

    # --- checkpointing (torchdata StatefulDataLoader convention) ------------
    def state_dict(self):
        """Where the stream stands: the next step this rank would receive.
        Store it in the trainer's checkpoint."""
        return {"version": STATE_VERSION, "next_step": self._next_step, "seed": self._seed,
                "steps": self.steps}

    def load_state_dict(self, state):
        """Continue the stream where `state` (from state_dict()) left it.
        Call before the first batch; the planner resumes from its checkpoint
        in checkpoint.dir at or before that step (docs/python.md)."""
        if self._impl.started:
            raise UsageError("load_state_dict() after the stream started: call it before the first batch")
        if state.get("version") != STATE_VERSION:
            raise ValueError(f"msd state version {state.get('version')!r}, this msd reads {STATE_VERSION}")
        if state["seed"] != self._seed:
            raise ValueError(f"msd state from a job with seed {state['seed']}, this job has seed {self._seed}")
        if not 0 <= state["next_step"] < self.steps:
            raise ValueError(f"msd state at step {state['next_step']}: this job's steps are 0..{self.steps - 1}")
        self._resume_step = int(state["next_step"])
        self._next_step = self._resume_step

    # --- the end ----------------------------------------------------------
    def finish(self):
        """Collective: the job's summary (docs/summary.md) as a dict, on every
        rank. Ends the last step's tensors and frees msd's MPI resources."""
        if self._summary is not None:
            return self._summary
        if self._start_error is not None:
            raise UsageError(f"finish() after a start-up that failed on every rank: {self._start_error}")
        self._start()
        self._end_lease("finish()")
        wall = time.perf_counter() - self._first_batch_time if self._first_batch_time is not None else 0.0
        text = self._impl.finish(self._delivered, max(wall - self._wait_seconds, 0.0), wall, self._comm.py2f())
        if self._impl.close():
            # A loader a shadow took over never confirmed its stop: at exit,
            # once every live rank is there, the planner ends the job with
            # status 0 (as msd-run does); MPI_Finalize would wait for it.
            atexit.register(self._impl.end_after_takeover)
        self._summary = json.loads(text)
        _open_jobs.discard(self)
        return self._summary
