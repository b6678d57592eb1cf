"""Buggy RolloutBuffer: minibatches() is a generator function, so its checks run at the first next().

The docstring asks for the phase and size errors when minibatches() is *called*;
a `yield` anywhere in the body defers every line, checks included, to the first
next(), far from the faulty call.
"""
EXERCISE = "ex5_rollout_buffer"
DIAGNOSIS = "buffer_errors_not_at_call"
DESCRIPTION = "RolloutBuffer.minibatches validates inside a generator body: errors surface at the first next()"
SEEN_IN = "classroom mistake (PEP 255: a generator's body, checks included, runs at the first next())"

import torch


class RolloutBuffer(RolloutBuffer):  # noqa: F821 - the solution's class, defined above
    def minibatches(self, mini_batch_size, generator=None):
        if not isinstance(mini_batch_size, int) or mini_batch_size < 1:
            raise ValueError(f"mini_batch_size must be an int >= 1, got {mini_batch_size!r}")
        if self._phase != "train":
            raise RuntimeError("minibatches() needs the train phase")
        perm = torch.randperm(self._size, generator=generator)
        cycle = self._cycle
        for start in range(0, len(perm), mini_batch_size):
            if cycle != self._cycle:
                raise RuntimeError("purged")
            idx = perm[start:start + mini_batch_size]
            yield {name: tensor[idx] for name, tensor in self._data.items()}
