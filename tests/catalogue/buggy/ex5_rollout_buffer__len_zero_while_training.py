"""Buggy RolloutBuffer: len() sums the rows of the chunks add() collected, which start_training() concatenates
into one tensor per field and clears, so len(buf) is 0 during the whole train phase although every sequence is
still stored (the docstring: the number of sequences stored in this cycle, 0 after purge).
"""
EXERCISE = "ex5_rollout_buffer"
DIAGNOSIS = "buffer_wrong_length"
DESCRIPTION = "len(RolloutBuffer) counts the collect phase's chunks: 0 in the train phase"
SEEN_IN = "classroom mistake (len() written against the collect-phase storage only)"


class RolloutBuffer(RolloutBuffer):  # noqa: F821 - the solution's class, defined above in the composed module
    """The solution's buffer with the mistake in __len__."""

    def __len__(self):
        return sum(chunk.shape[0] for chunk in next(iter(self._chunks.values()), []))
