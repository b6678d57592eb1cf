"""Buggy (u45 of the landing-7 unseen set, written outside the project from the docstrings alone):
purge leaves the phase at "train".

Clause broken: "purge(): wipe, back to "collect""
Expected diagnosis (the set's manifest): After purge the buffer stays in the train phase and the next add() raises. The cycle cannot restart.
"""
EXERCISE = "ex5_rollout_buffer"
DIAGNOSIS = "buffer_use_after_purge"
DESCRIPTION = "purge leaves the phase at \"train\""
SEEN_IN = "the landing-7 unseen set (u45), written outside the project from the docstrings alone"


class RolloutBuffer(RolloutBuffer):
    """The solution's RolloutBuffer with purge replaced."""

    def purge(self) -> None:
        self._chunks = {}
        self._data = {}
        self._size = 0
        self._cycle += 1
