"""Buggy RolloutBuffer: minibatches() shuffles only when given a generator; with generator=None it yields the
rows in storage order, while the docstring says None means torch's global RNG (every epoch shuffled).
"""
EXERCISE = "ex5_rollout_buffer"
DIAGNOSIS = "buffer_wrong_minibatch_order"
DESCRIPTION = "RolloutBuffer.minibatches(generator=None) yields rows in storage order instead of a global-RNG shuffle"
SEEN_IN = "classroom mistake (`if generator is not None: perm = randperm(...)` with arange as the fallback)"

import torch


class RolloutBuffer(RolloutBuffer):  # noqa: F821 - the solution's class, defined above in the composed module
    """The solution's buffer with the mistake in minibatches()."""

    def minibatches(self, mini_batch_size, generator=None):
        if not isinstance(mini_batch_size, int) or mini_batch_size < 1:
            raise ValueError(f"mini_batch_size must be an int >= 1, got {mini_batch_size!r}")
        if self._phase != "train":
            raise RuntimeError("minibatches() in the collect phase; call start_training() first")
        if generator is not None:
            perm = torch.randperm(self._size, generator=generator)
        else:
            perm = torch.arange(self._size)
        cycle = self._cycle

        def chunks():
            for start in range(0, len(perm), mini_batch_size):
                if cycle != self._cycle:
                    raise RuntimeError("this iterator was made before purge()")
                idx = perm[start:start + mini_batch_size]
                yield {name: tensor[idx] for name, tensor in self._data.items()}

        return chunks()
