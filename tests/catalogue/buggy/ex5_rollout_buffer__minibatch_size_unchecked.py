"""Buggy RolloutBuffer: minibatches() never checks mini_batch_size.

A negative size gives an empty epoch (range with a negative step), so a typo in
the config silently trains on nothing; the docstring asks for ValueError.
"""
EXERCISE = "ex5_rollout_buffer"
DIAGNOSIS = "buffer_bad_minibatch_size"
DESCRIPTION = "RolloutBuffer.minibatches accepts mini_batch_size < 1 (an empty epoch for a negative size)"
SEEN_IN = "classroom mistake (validation of the config left to torch)"

import torch


class RolloutBuffer(RolloutBuffer):  # noqa: F821 - the solution's class, defined above
    def minibatches(self, mini_batch_size, generator=None):
        if self._phase != "train":
            raise RuntimeError("minibatches() needs the train phase")
        perm = torch.randperm(self._size, generator=generator)
        cycle = self._cycle

        def chunks():
            for start in range(0, len(perm), mini_batch_size):
                if cycle != self._cycle:
                    raise RuntimeError("purged")
                idx = perm[start:start + mini_batch_size]
                yield {name: tensor[idx] for name, tensor in self._data.items()}

        return chunks()
