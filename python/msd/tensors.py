"""Tensors that are views of msd's buffers, valid for one step.

msd builds every step into the same buffers, so a step's tensors are views
(no copy) that the next step overwrites. Each view carries the lease of its
step; once the lease ends (the next step was requested, or the job finished)
any torch operation on the view, or on a view taken from it, raises
StaleBatchError instead of reading another step's data or freed memory.
Copies (``.clone()``, ``.long()``, ``.to(...)``) own their memory and are
ordinary tensors.
"""

import torch


class StaleBatchError(RuntimeError):
    """A tensor of a step was used after msd moved on to the next step."""


class Lease:
    """The validity of one step's buffers: their address ranges and the step."""

    def __init__(self, step, ranges):
        self.step = step
        self.ranges = ranges  # [(first byte, one past the last byte)] of every buffer
        self.valid = True
        self.ended_by = None

    def end(self, why):
        self.valid = False
        self.ended_by = why

    def covers(self, address):
        return any(lo <= address < hi for lo, hi in self.ranges)

    def check(self):
        if not self.valid:
            raise StaleBatchError(
                f"a tensor of step {self.step} was used after {self.ended_by}: msd reuses its buffers, so a "
                f"step's tensors are views valid only until the next step; .clone() what you keep")


def _leases(value, found):
    if isinstance(value, BatchTensor):
        found.append(value.__dict__.get("_msd_lease"))
    elif isinstance(value, (list, tuple)):
        for item in value:
            _leases(item, found)
    elif isinstance(value, dict):
        for item in value.values():
            _leases(item, found)
    return found


def _track(value, lease):
    """Views of the step's buffers among the results stay leased."""
    if isinstance(value, torch.Tensor):
        if value.numel() > 0 and lease.covers(value.data_ptr()):
            if type(value) is not BatchTensor:
                value = value.as_subclass(BatchTensor)
            value._msd_lease = lease
        return value
    if isinstance(value, (list, tuple)) and any(isinstance(v, torch.Tensor) for v in value):
        return type(value)(_track(v, lease) for v in value)
    return value


class BatchTensor(torch.Tensor):
    """A torch.Tensor viewing msd's buffer for one step (see the module doc)."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        leases = [lease for lease in _leases(args, []) + _leases(kwargs, []) if lease is not None]
        for lease in leases:
            lease.check()
        with torch._C.DisableTorchFunction():
            out = func(*args, **kwargs)
            return _track(out, leases[0]) if leases else out


def leased_view(array, lease):
    """A BatchTensor over the numpy view `array` (no copy)."""
    tensor = torch.from_numpy(array).as_subclass(BatchTensor)
    tensor._msd_lease = lease
    return tensor
