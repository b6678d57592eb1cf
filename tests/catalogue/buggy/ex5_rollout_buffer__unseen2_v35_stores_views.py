"""Buggy (v35 of the unseen2 set, written outside the project from the docstrings alone):
Stores `value.detach()` (a view that shares storage) without `.clone()`.

Clause broken: “stores copies, so later edits of the inputs do not leak in”
Expected diagnosis (the set's manifest): The buffer keeps views of the caller's tensors, so editing them afterwards changes the stored rollouts. Store clones.
Graded as: buffer_aliases_inputs.
"""
EXERCISE = "ex5_rollout_buffer"
DIAGNOSIS = "buffer_aliases_inputs"
DESCRIPTION = "Stores `value.detach()` (a view that shares storage) without `.clone()`"
SEEN_IN = "the unseen2 set (v35), written outside the project from the docstrings alone"


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
                if value.shape[1:] != first.shape[1:] or value.dtype != first.dtype:
                    raise ValueError(
                        f"RolloutBuffer.add: field {name!r} has trailing shape {tuple(value.shape[1:])} and dtype "
                        f"{value.dtype}, but this cycle started with {tuple(first.shape[1:])} and {first.dtype}"
                    )
        for name, value in fields.items():
            # A copy: the caller may reuse or modify its tensors after add().
            self._chunks.setdefault(name, []).append(value.detach())
        self._size += next(iter(batch_sizes.values()))
