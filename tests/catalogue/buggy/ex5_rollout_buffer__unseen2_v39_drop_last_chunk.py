"""Buggy (v39 of the unseen2 set, written outside the project from the docstrings alone):
Drops the last incomplete mini-batch (drop_last).

Clause broken: “chunks ``perm[i : i + mini_batch_size]`` in order (the last may be smaller)”
Expected diagnosis (the set's manifest): The last, smaller mini-batch is dropped, so some sequences are never trained on. Yield it too.
Graded as: buffer_drops_last_minibatch.
"""
EXERCISE = "ex5_rollout_buffer"
DIAGNOSIS = "buffer_drops_last_minibatch"
DESCRIPTION = "Drops the last incomplete mini-batch (drop_last)"
SEEN_IN = "the unseen2 set (v39), written outside the project from the docstrings alone"


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
            for start in range(0, len(perm) - mini_batch_size + 1, mini_batch_size):
                # Checked before every chunk: purged data must never reach an update.
                if cycle != self._cycle:
                    raise RuntimeError("RolloutBuffer: this mini-batch iterator was made before purge(); its data is gone")
                idx = perm[start : start + mini_batch_size]
                yield {name: tensor[idx.to(tensor.device)] for name, tensor in self._data.items()}

        return chunks()
