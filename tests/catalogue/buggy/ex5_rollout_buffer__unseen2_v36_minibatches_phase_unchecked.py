"""Buggy (v36 of the unseen2 set, written outside the project from the docstrings alone):
No phase check in `minibatches`.

Clause broken: “RuntimeError: if not in the train phase (at call time)”
Expected diagnosis (the set's manifest): `minibatches` works during the collect phase. It must raise `RuntimeError` until `start_training()` is called.
Graded as: buffer_minibatches_during_collect (also buffer_use_after_purge).
"""
EXERCISE = "ex5_rollout_buffer"
DIAGNOSIS = "buffer_minibatches_during_collect"
ALSO = "buffer_use_after_purge"
DESCRIPTION = "No phase check in `minibatches`"
SEEN_IN = "the unseen2 set (v36), written outside the project from the docstrings alone"


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
