"""Buggy RolloutBuffer: add() remembers the first call's keys, trailing shapes and dtypes in a schema that
purge() never resets, so every later cycle must look like the very first one: the next PPO step's longer
responses are refused with ValueError. The docstring checks each call against "the first call of this
cycle", and purge() wipes everything (Book §5.5.2).
"""
EXERCISE = "ex5_rollout_buffer"
DIAGNOSIS = "buffer_use_after_purge"
DESCRIPTION = "RolloutBuffer keeps the first cycle's field schema after purge(): a new cycle with other shapes is refused"
SEEN_IN = "classroom mistake (the schema set once in add() and forgotten in purge())"


class RolloutBuffer(RolloutBuffer):  # noqa: F821 - the solution's class, defined above in the composed module
    """The solution's buffer with a schema that outlives purge()."""

    _schema = None

    def add(self, **fields):
        if self._schema is not None and self._phase == "collect":
            for name, value in fields.items():
                want = self._schema.get(name)
                if want is None or value.shape[1:] != want[0] or value.dtype != want[1]:
                    raise ValueError(f"field {name!r} does not match the buffer's schema {self._schema}")
        super().add(**fields)
        if self._schema is None:
            self._schema = {name: (value.shape[1:], value.dtype) for name, value in fields.items()}
