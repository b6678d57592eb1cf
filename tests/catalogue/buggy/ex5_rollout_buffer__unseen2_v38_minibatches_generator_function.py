"""Buggy (v38 of the unseen2 set, written outside the project from the docstrings alone):
`minibatches` is itself a generator function (`yield from`), so validation and the permutation draw wait until the first `next()`.

Clause broken: “``perm = torch.randperm(len(self), generator=generator)`` drawn when this method is called ... ValueError: if ``mini_batch_size < 1`` (raised at call time)”
Expected diagnosis (the set's manifest): Because your method is a generator, its checks and its randperm run late, at first iteration. Errors then show up in the wrong place, and any generator use in between changes the order. Validate and draw the permutation eagerly, then return an iterator.
Graded as: buffer_errors_not_at_call.
"""
EXERCISE = "ex5_rollout_buffer"
DIAGNOSIS = "buffer_errors_not_at_call"
DESCRIPTION = "`minibatches` is itself a generator function (`yield from`), so validation and the permutation draw wait until the first `next()`"
SEEN_IN = "the unseen2 set (v38), written outside the project from the docstrings alone"


class RolloutBuffer(RolloutBuffer):
    """The solution's RolloutBuffer with minibatches replaced."""

    def minibatches(
        self, mini_batch_size: int, generator: torch.Generator | None = None
    ) -> Iterator[dict[str, torch.Tensor]]:
        if not isinstance(mini_batch_size, int) or mini_batch_size < 1:
            raise ValueError(f"RolloutBuffer.minibatches: mini_batch_size must be an int >= 1, got {mini_batch_size!r}")
        if self._phase != "train":
            raise RuntimeError(
                "RolloutBuffer.minibatches: the buffer is in the collect phase; call start_training() first"
            )
        perm = torch.randperm(self._size, generator=generator)
        cycle = self._cycle

        def chunks() -> Iterator[dict[str, torch.Tensor]]:
            for start in range(0, len(perm), mini_batch_size):
                # Checked before every chunk: purged data must never reach an update.
                if cycle != self._cycle:
                    raise RuntimeError("RolloutBuffer: this mini-batch iterator was made before purge(); its data is gone")
                idx = perm[start : start + mini_batch_size]
                yield {name: tensor[idx.to(tensor.device)] for name, tensor in self._data.items()}

        yield from chunks()  # lazy: nothing runs until the first next()
