"""Buggy RolloutBuffer: add() stores value.clone() without detach().

The copy protects against the caller's in-place edits but keeps the caller's
autograd graph: every mini-batch drags the rollout's graph along (memory) and a
backward through a stored field reaches the rollout's parameters.
"""
EXERCISE = "ex5_rollout_buffer"
DIAGNOSIS = "buffer_keeps_graph"
DESCRIPTION = "RolloutBuffer.add stores clone() without detach(): stored fields keep the caller's autograd graph"
SEEN_IN = "classroom mistake (clone() alone keeps grad_fn); cf. pytorch forums 'clone vs detach'"

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
        if self._chunks:
            if set(fields) != set(self._chunks):
                raise ValueError("keys differ from this cycle's")
            for name, value in fields.items():
                first = self._chunks[name][0]
                if value.shape[1:] != first.shape[1:] or value.dtype != first.dtype:
                    raise ValueError(f"field {name!r} differs from this cycle's first add()")
        for name, value in fields.items():
            self._chunks.setdefault(name, []).append(value.clone())
        self._size += next(iter(sizes.values()))
