"""Buggy (v44 of the unseen2 set, written outside the project from the docstrings alone):
`start_training` accepts an empty buffer.

Clause broken: “Raises: RuntimeError: if the buffer is empty or not in the collect phase.”
Expected diagnosis (the set's manifest): Training on an empty buffer should raise `RuntimeError`. Check that something was added.
Graded as: buffer_start_training_empty.
"""
EXERCISE = "ex5_rollout_buffer"
DIAGNOSIS = "buffer_start_training_empty"
DESCRIPTION = "`start_training` accepts an empty buffer"
SEEN_IN = "the unseen2 set (v44), written outside the project from the docstrings alone"


class RolloutBuffer(RolloutBuffer):
    """The solution's RolloutBuffer with start_training replaced."""

    def start_training(self) -> None:
        if self._phase != "collect":
            raise RuntimeError("RolloutBuffer.start_training: already in the train phase")
        self._data = {name: torch.cat(chunks, dim=0) for name, chunks in self._chunks.items()}
        self._chunks = {}
        self._phase = "train"
