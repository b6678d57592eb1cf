"""Buggy (u40 of the landing-7 unseen set, written outside the project from the docstrings alone):
the phase check in minibatches removed.

Clause broken: "iterating mini-batches in the collect phase ... raise a clear error"
Expected diagnosis (the set's manifest): Mini-batches can be drawn before start_training(). It should raise RuntimeError.
"""
EXERCISE = "ex5_rollout_buffer"
DIAGNOSIS = "buffer_minibatches_during_collect"
DESCRIPTION = "the phase check in minibatches removed"
SEEN_IN = "the landing-7 unseen set (u40), written outside the project from the docstrings alone"
ALSO = "buffer_use_after_purge"


class RolloutBuffer(RolloutBuffer):
    """The solution's RolloutBuffer with minibatches replaced."""

    def minibatches(
        self, mini_batch_size: int, generator: torch.Generator | None = None
    ) -> Iterator[dict[str, torch.Tensor]]:
        if not isinstance(mini_batch_size, int) or mini_batch_size < 1:
            raise ValueError(f"RolloutBuffer.minibatches: mini_batch_size must be an int >= 1, got {mini_batch_size!r}")
        perm = torch.randperm(self._size, generator=generator)
        cycle = self._cycle

        def chunks() -> Iterator[dict[str, torch.Tensor]]:
            for start in range(0, len(perm), mini_batch_size):
                # Checked before every chunk: purged data must never reach an update.
                if cycle != self._cycle:
                    raise RuntimeError("RolloutBuffer: this mini-batch iterator was made before purge(); its data is gone")
                idx = perm[start : start + mini_batch_size]
                yield {name: tensor[idx.to(tensor.device)] for name, tensor in self._data.items()}

        return chunks()
