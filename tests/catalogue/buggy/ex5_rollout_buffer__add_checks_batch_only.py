"""Buggy RolloutBuffer: add() checks the batch sizes of one call, not the consistency across calls.

A second add() with another key set, trailing shape or dtype is stored; the
cycle's fields then fail in torch.cat at start_training (far from the faulty
add) or, for a missing key, leave mini-batches with misaligned rows.
"""
EXERCISE = "ex5_rollout_buffer"
DIAGNOSIS = "buffer_inconsistent_fields"
DESCRIPTION = "RolloutBuffer.add checks batch sizes within a call, not keys/trailing shapes/dtypes across calls"
SEEN_IN = "classroom mistake (per-call validation only); the issue-16 held-out buffers"

import torch


class RolloutBuffer(RolloutBuffer):  # noqa: F821 - the solution's class, defined above
    def add(self, **fields):
        if self._phase != "collect":
            raise RuntimeError("add() needs the collect phase")
        if not fields:
            raise ValueError("add() needs at least one field")
        for name, value in fields.items():
            if not isinstance(value, torch.Tensor) or value.dim() < 1:
                raise ValueError(f"field {name!r} must be a tensor [batch, ...]")
        sizes = {name: value.shape[0] for name, value in fields.items()}
        if len(set(sizes.values())) != 1:
            raise ValueError(f"different batch sizes {sizes}")
        for name, value in fields.items():
            self._chunks.setdefault(name, []).append(value.detach().clone())
        self._size += next(iter(sizes.values()))
