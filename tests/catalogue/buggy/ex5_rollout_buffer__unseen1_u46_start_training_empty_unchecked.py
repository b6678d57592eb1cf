"""Buggy (u46 of the landing-7 unseen set, written outside the project from the docstrings alone):
the empty check removed.

Clause broken: "start_training ... Raises: RuntimeError: if the buffer is empty"
Expected diagnosis (the set's manifest): start_training() on an empty buffer is accepted. It should raise.
"""
EXERCISE = "ex5_rollout_buffer"
DIAGNOSIS = "buffer_start_training_empty"
DESCRIPTION = "the empty check removed"
SEEN_IN = "the landing-7 unseen set (u46), written outside the project from the docstrings alone"


class RolloutBuffer(RolloutBuffer):
    """The solution's RolloutBuffer with start_training replaced."""

    def start_training(self) -> None:
        if self._phase != "collect":
            raise RuntimeError("RolloutBuffer.start_training: already in the train phase")
        self._data = {name: torch.cat(chunks, dim=0) for name, chunks in self._chunks.items()}
        self._chunks = {}
        self._phase = "train"
