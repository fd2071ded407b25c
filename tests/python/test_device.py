"""msd.Job(device=...) (docs/gpu.md): a device that cannot be used fails
before any work (no MPI, no job) with msd.ConfigError naming the option."""
import sys

import pytest
import torch

import msd


def test_cuda_without_a_device_fails_before_any_work():
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present: device='cuda' is valid here")
    assert "mpi4py.MPI" not in sys.modules
    with pytest.raises(msd.ConfigError, match=r"device='cuda'.*no CUDA device"):
        msd.Job(None, device="cuda")
    with pytest.raises(msd.ConfigError, match=r"device='cuda:1'"):
        msd.Job(None, device="cuda:1")
    assert "mpi4py.MPI" not in sys.modules  # failed before MPI started


def test_an_unknown_device_names_the_option():
    with pytest.raises(msd.ConfigError, match=r"device='tpu'.*'cpu' or 'cuda'"):
        msd.Job(None, device="tpu")
    assert "mpi4py.MPI" not in sys.modules
