"""Buggy (u41 of the landing-7 unseen set, written outside the project from the docstrings alone):
purge does not invalidate old iterators.

Clause broken: "advancing a mini-batch iterator after purge ... raise[s] RuntimeError"
Expected diagnosis (the set's manifest): An iterator made before purge() keeps going (yields empty or stale batches) instead of raising.
"""
EXERCISE = "ex5_rollout_buffer"
DIAGNOSIS = "buffer_use_after_purge"
DESCRIPTION = "purge does not invalidate old iterators"
SEEN_IN = "the landing-7 unseen set (u41), written outside the project from the docstrings alone"


class RolloutBuffer(RolloutBuffer):
    """The solution's RolloutBuffer with purge replaced."""

    def purge(self) -> None:
        self._chunks = {}
        self._data = {}
        self._size = 0
        self._phase = "collect"
