"""Buggy (v41 of the unseen2 set, written outside the project from the docstrings alone):
Checks trailing shapes but not dtypes; torch.cat later promotes them silently.

Clause broken: “Every call of a cycle must use the same keys and the same trailing shapes (and dtypes) as the first.”
Expected diagnosis (the set's manifest): A second `add` with another dtype was accepted. Compare dtypes as well as shapes and raise `ValueError`.
Graded as: buffer_inconsistent_fields.
"""
EXERCISE = "ex5_rollout_buffer"
DIAGNOSIS = "buffer_inconsistent_fields"
DESCRIPTION = "Checks trailing shapes but not dtypes; torch.cat later promotes them silently"
SEEN_IN = "the unseen2 set (v41), written outside the project from the docstrings alone"


class RolloutBuffer(RolloutBuffer):
    """The solution's RolloutBuffer with add replaced."""

    def add(self, **fields: torch.Tensor) -> None:
        if self._phase != "collect":
            raise RuntimeError(
                "RolloutBuffer.add: the buffer is in the train phase; call purge() before collecting new rollouts"
            )
        if not fields:
            raise ValueError("RolloutBuffer.add: give at least one field, e.g. add(logp_old=..., values=...)")
        for name, value in fields.items():
            if not isinstance(value, torch.Tensor) or value.dim() < 1:
                raise ValueError(f"RolloutBuffer.add: field {name!r} must be a tensor [batch, ...], got {value!r:.80}")
        batch_sizes = {name: value.shape[0] for name, value in fields.items()}
        if len(set(batch_sizes.values())) != 1:
            raise ValueError(f"RolloutBuffer.add: fields have different batch sizes {batch_sizes}")
        if self._chunks:
            if set(fields) != set(self._chunks):
                raise ValueError(
                    f"RolloutBuffer.add: keys {sorted(fields)} differ from this cycle's keys {sorted(self._chunks)}"
                )
            for name, value in fields.items():
                first = self._chunks[name][0]
                if value.shape[1:] != first.shape[1:]:
                    raise ValueError(
                        f"RolloutBuffer.add: field {name!r} has trailing shape {tuple(value.shape[1:])} and dtype "
                        f"{value.dtype}, but this cycle started with {tuple(first.shape[1:])} and {first.dtype}"
                    )
        for name, value in fields.items():
            # A copy: the caller may reuse or modify its tensors after add().
            self._chunks.setdefault(name, []).append(value.detach().clone())
        self._size += next(iter(batch_sizes.values()))
