"""Buggy (v42 of the unseen2 set, written outside the project from the docstrings alone):
`purge` does not reset the row count.

Clause broken: “Number of sequences (rows) stored in this cycle; 0 after ``purge``.”
Expected diagnosis (the set's manifest): After `purge()` your `len(buffer)` still counts the old rows (and later permutations cover indices that don't exist). Reset the count.
Graded as: buffer_use_after_purge.
"""
EXERCISE = "ex5_rollout_buffer"
DIAGNOSIS = "buffer_use_after_purge"
DESCRIPTION = "`purge` does not reset the row count"
SEEN_IN = "the unseen2 set (v42), written outside the project from the docstrings alone"


class RolloutBuffer(RolloutBuffer):
    """The solution's RolloutBuffer with purge replaced."""

    def purge(self) -> None:
        self._chunks = {}
        self._data = {}
        self._phase = "collect"
        self._cycle += 1
