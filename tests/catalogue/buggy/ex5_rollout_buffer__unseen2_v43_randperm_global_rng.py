"""Buggy (v43 of the unseen2 set, written outside the project from the docstrings alone):
Ignores the `generator` argument and draws from the global RNG.

Clause broken: “perm = torch.randperm(len(self), generator=generator)”
Expected diagnosis (the set's manifest): Your mini-batch order ignores the generator you were given, so runs aren't reproducible and don't match the reference order. Pass `generator=` to `randperm`.
Graded as: buffer_wrong_minibatch_order.
"""
EXERCISE = "ex5_rollout_buffer"
DIAGNOSIS = "buffer_wrong_minibatch_order"
DESCRIPTION = "Ignores the `generator` argument and draws from the global RNG"
SEEN_IN = "the unseen2 set (v43), written outside the project from the docstrings alone"


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
        perm = torch.randperm(self._size)
        cycle = self._cycle

        def chunks() -> Iterator[dict[str, torch.Tensor]]:
            for start in range(0, len(perm), mini_batch_size):
                # Checked before every chunk: purged data must never reach an update.
                if cycle != self._cycle:
                    raise RuntimeError("RolloutBuffer: this mini-batch iterator was made before purge(); its data is gone")
                idx = perm[start : start + mini_batch_size]
                yield {name: tensor[idx.to(tensor.device)] for name, tensor in self._data.items()}

        return chunks()
