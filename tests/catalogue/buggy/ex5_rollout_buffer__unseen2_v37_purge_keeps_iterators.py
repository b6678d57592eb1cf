"""Buggy (v37 of the unseen2 set, written outside the project from the docstrings alone):
No cycle check: an old iterator keeps yielding (empty) mini-batches after purge.

Clause broken: “Mini-batch iterators made before the purge raise ``RuntimeError`` when advanced.”
Expected diagnosis (the set's manifest): An iterator made before `purge()` silently kept going on wiped data. Invalidate old iterators so they raise `RuntimeError`.
Graded as: buffer_use_after_purge.
"""
EXERCISE = "ex5_rollout_buffer"
DIAGNOSIS = "buffer_use_after_purge"
DESCRIPTION = "No cycle check: an old iterator keeps yielding (empty) mini-batches after purge"
SEEN_IN = "the unseen2 set (v37), written outside the project from the docstrings alone"


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
                idx = perm[start : start + mini_batch_size]
                yield {name: tensor[idx.to(tensor.device)] for name, tensor in self._data.items()}

        return chunks()
