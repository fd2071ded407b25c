"""msd.Job under mpirun (tests/scripts/python_job.sh runs it on the job's
world, 1 planner + 1 loader + 2 clients). Every test is collective: each rank
runs the same tests in the same order, and checks come after the job's
collective calls so that a failing check cannot leave a peer waiting.

Environment (set by the script): MSD_TEST_CONFIG, the job's configuration;
MSD_TEST_REFERENCE, msd-run's summary JSON for it; MSD_TEST_SCRATCH, a
directory shared by the ranks; MSD_TEST_EOD_ID, when set, a token id every
client's tokens must hold (a tokenizer.json job's end-of-document token).
"""

import json
import os

import numpy as np
import pytest
import torch
from mpi4py import MPI

import msd

CONFIG = os.environ["MSD_TEST_CONFIG"]
SCRATCH = os.environ["MSD_TEST_SCRATCH"]
with open(os.environ["MSD_TEST_REFERENCE"]) as f:
    REFERENCE = json.load(f)
WORLD = MPI.COMM_WORLD
EOD_ID = int(os.environ["MSD_TEST_EOD_ID"]) if os.environ.get("MSD_TEST_EOD_ID") else None


def run(job, on_batch=None):
    """Serves or consumes the whole stream; returns [(step, digest)] and the summary."""
    seen = []
    if job.role == "client":
        for batch in job.batches():
            seen.append((batch.step, batch.digest))
            if on_batch:
                on_batch(batch)
    else:
        job.serve()
    return seen, job.finish()


def copy_of(mb):
    """The micro-batch's fields as numpy copies, for msd.digest."""
    fields = {name: (t.clone().numpy() if t is not None else np.zeros(0, np.uint8)) for name, t in mb.as_dict().items()}
    fields.update({key: getattr(mb, key) for key in ("sequences", "seq_len", "cp_rank", "cp_size", "cp_by_segment",
                                                      "has_inputs", "has_targets")})
    return fields


def test_tensors_are_the_cpp_batches_without_a_copy():
    job = msd.Job(CONFIG)
    recomputed, not_shared, patches, shapes, eod_seen = [], [], [], [], []

    def check(batch):
        recomputed.append(msd.digest(batch.step, [copy_of(mb) for mb in batch.micro_batches]) == batch.digest)
        for i, mb in enumerate(batch.micro_batches):
            if mb.has_inputs:
                patches.append(mb.patches.shape[0])
            for name, tensor in mb.as_dict().items():
                if tensor is not None and tensor.numel() > 0 and tensor.data_ptr() != job._impl.address(i, name):
                    not_shared.append((batch.step, i, name))
            if mb.tokens is not None:
                shapes.append(mb.tokens.dtype == torch.int32 and
                              mb.tokens.shape == (mb.sequences, mb.seq_len // mb.cp_size))
                if EOD_ID is not None:
                    eod_seen.append(bool((mb.tokens == EOD_ID).any()))

    seen, summary = run(job, check)
    assert summary["batch_digest"] == REFERENCE["batch_digest"]
    assert summary["step_digests"] == REFERENCE["step_digests"]
    if job.role == "client":
        assert [s for s, _ in seen] == list(range(REFERENCE["steps"]))
        assert recomputed and all(recomputed), "a step's tensors do not hold the batch msd built"
        assert not not_shared, f"tensors not in msd's buffers: {not_shared}"
        assert all(shapes), "tokens are not int32 [sequences, seq_len / cp]"
        assert EOD_ID is None or any(eod_seen), f"no end-of-document token {EOD_ID} in this rank's tokens"
        # The test configurations mix in an image-text source: a rank that
        # holds inputs sees image patches in some step.
        assert not patches or sum(patches) > 0, "no image patches reached this rank"


def test_tensor_used_after_the_next_step_raises():
    job = msd.Job(CONFIG)
    errors = {}
    if job.role == "client":
        first = next(job)
        tokens = first.micro_batches[0].tokens
        row = tokens[0]                 # a view of a view stays leased
        kept = tokens.clone()           # a copy is the trainer's own
        expected = kept.sum().item()
        assert row.sum().item() == kept[0].sum().item()
        next(job)
        for what, use in {"tensor": lambda: tokens + 1, "view": lambda: row.sum(), "print": lambda: repr(tokens),
                          "batch": lambda: first.micro_batches}.items():
            try:
                use()
            except msd.StaleBatchError as e:
                errors[what] = str(e)
        assert kept.sum().item() == expected
        for _ in job:
            pass
    else:
        job.serve()
    job.finish()
    if job.role == "client":
        assert set(errors) == {"tensor", "view", "print", "batch"}, errors
        assert "step 0" in errors["tensor"] and ".clone()" in errors["tensor"]


def test_iterating_on_a_loader_rank_raises():
    job = msd.Job(CONFIG)
    error = None
    if job.role != "client":
        try:
            job.batches()
        except msd.UsageError as e:
            error = str(e)
    run(job)
    if job.role != "client":
        assert error and "serve()" in error and job.role in error


def test_wrong_world_size_raises_on_every_rank():
    with pytest.raises(msd.ConfigError, match="MPI ranks"):
        msd.Job(CONFIG, comm=MPI.COMM_SELF)


def test_config_errors_name_the_option():
    with pytest.raises(msd.ConfigError, match="job.stepz"):
        msd.Job(CONFIG, overrides=["--job.stepz=3"])
    with pytest.raises(msd.ConfigError, match="job.seq_len"):
        msd.Job(CONFIG, overrides=["--job.seq_len=banana"])
    with pytest.raises(msd.ConfigError):
        msd.Job(os.path.join(SCRATCH, "no-such.ini"))


def test_state_dict_restart_continues_the_stream():
    checkpoints = os.path.join(SCRATCH, "restart")
    options = [f"--checkpoint.dir={checkpoints}", "--checkpoint.planner_every=2", "--checkpoint.keep=100"]
    steps = REFERENCE["steps"]
    resume_at = steps // 2 + 1
    job = msd.Job(CONFIG, overrides=options)
    saved = {}

    def save(batch):
        if batch.step == resume_at - 1:
            saved["data"] = job.state_dict()

    seen, _ = run(job, save)

    job = msd.Job(CONFIG, overrides=options)
    if job.role == "client":
        job.load_state_dict(saved["data"])
    resumed, summary = run(job)
    if job.role == "client":
        assert saved["data"]["next_step"] == resume_at
        assert resumed == seen[resume_at:]
    assert summary["first_step"] == resume_at
    assert summary["step_digests"] == REFERENCE["step_digests"][resume_at:]


def test_load_state_dict_after_the_start_raises():
    job = msd.Job(CONFIG)
    error = None
    if job.role == "client":
        state = job.state_dict()
        next(job)
        try:
            job.load_state_dict(state)
        except msd.UsageError as e:
            error = str(e)
    run(job)
    if job.role == "client":
        assert error and "before the first batch" in error


def test_metrics_option_writes_a_line_per_step():
    path = os.path.join(SCRATCH, "metrics.jsonl")
    job = msd.Job(CONFIG, overrides=[f"--metrics={path}"])
    _, summary = run(job)
    WORLD.Barrier()  # the planner wrote the last line before the summary; every rank reads it now
    with open(path) as f:
        lines = [json.loads(line) for line in f]
    assert [line["step"] for line in lines] == list(range(REFERENCE["steps"]))
    assert sum(line["tokens"] for line in lines) == summary["tokens"] == REFERENCE["tokens"]
    assert summary["batch_digest"] == REFERENCE["batch_digest"]


def test_global_loss_tokens_is_the_steps_labelled_positions():
    """With msd's placement options (variable micro-batches, cut-aware cuts,
    the outlier hold), every rank's batch carries the step's labelled
    positions over all data-parallel ranks: the sum of their loss masks."""
    options = ["--job.micro_batch_shape=varlen", "--job.cuts=balance", "--job.micro_batch_count=variable",
               "--job.hold_above=0.5", "--job.max_positions_per_micro_batch=512"]
    job = msd.Job(CONFIG, overrides=options)
    claimed, summed, counts = [], [], []

    def check(batch):
        mine = sum(int(mb.loss_mask.sum()) for mb in batch.micro_batches if mb.has_targets)
        summed.append(job.dp.allreduce(mine, op=MPI.SUM))
        claimed.append(batch.global_loss_tokens)
        counts.append(len(batch.micro_batches))

    _, summary = run(job, check)
    if job.role == "client":
        assert claimed == summed and all(c > 0 for c in claimed)
        assert min(counts) >= 2  # job.micro_batches is the least
    placement = summary["placement"]
    assert placement["cuts"] == "balance" and placement["micro_batch_count"] == "variable"
    assert 0 < placement["pieces"] <= placement["megatron_pieces"]
    assert placement["hold"]["held"] > 0 and placement["hold"]["max_delay"] <= 8


def test_global_loss_tokens_with_the_options_off():
    job = msd.Job(CONFIG)
    claimed, summed = [], []

    def check(batch):
        summed.append(job.dp.allreduce(sum(int(mb.loss_mask.sum()) for mb in batch.micro_batches), op=MPI.SUM))
        claimed.append(batch.global_loss_tokens)

    _, summary = run(job, check)
    if job.role == "client":
        assert claimed == summed and all(c > 0 for c in claimed)
    assert summary["batch_digest"] == REFERENCE["batch_digest"]
