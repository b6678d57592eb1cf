"""Correct variant (c05 of the unseen2 set, written outside the project from the docstrings
alone): State in one dict, list of added batches, explicit iterator class checking an epoch token on every `__next__` (every advance after purge raises RuntimeError, not only the first), `index_select` for mini-batches.
"""
EXERCISE = "ex5_rollout_buffer"
DESCRIPTION = "c05: State in one dict, list of added batches, explicit iterator class checking an epoch token on every `__next__` (every advance after purge raises RuntimeError, not only the first), `index_select` for mini-batches"

from collections.abc import Iterator

import torch

__all__ = ["RolloutBuffer"]


class RolloutBuffer:
    """On-policy rollout storage with a strict collect → train → purge cycle (Book eq. 5.13, §5.5).

    Misuse raises a clear error instead of silently training on the wrong
    data: ``add`` outside the collect phase, ``minibatches`` outside the train
    phase, and advancing a mini-batch iterator after ``purge`` all raise
    ``RuntimeError``.

    Example (4 sequences, mini-batches of 3 → chunks of 3 and 1):
        >>> import torch
        >>> buf = RolloutBuffer()
        >>> buf.add(logp_old=torch.zeros(4, 3), rewards=torch.ones(4, 3))
        >>> len(buf), buf.phase
        (4, 'collect')
        >>> buf.start_training()
        >>> [mb["logp_old"].shape[0] for mb in buf.minibatches(3)]
        [3, 1]
        >>> buf.purge()
        >>> len(buf), buf.phase
        (0, 'collect')
    """

    def __init__(self) -> None:
        """An empty buffer in the collect phase."""
        self._state = {"phase": "collect", "fields": None, "rows": 0, "epoch": 0}
        self._store: list[dict[str, torch.Tensor]] = []
        self._table: dict[str, torch.Tensor] | None = None

    @property
    def phase(self) -> str:
        """The current phase: ``"collect"`` (accepting rollouts) or ``"train"`` (serving mini-batches)."""
        return self._state["phase"]

    def __len__(self) -> int:
        """Number of sequences (rows) stored in this cycle; 0 after ``purge``."""
        return self._state["rows"]

    def add(self, **fields: torch.Tensor) -> None:
        """Store a batch of rollouts (collect phase only); stores copies, so later edits of the inputs do not leak in.

        Args:
            **fields: keyword tensors, each [batch, ...] with the same ``batch``
                (e.g. ``responses=[B, T] long``, ``logp_old=[B, T] float``). Every
                call of a cycle must use the same keys and the same trailing shapes
                (and dtypes) as the first.

        Raises:
            RuntimeError: if the buffer is not in the collect phase.
            ValueError: if no fields are given, a field is not a tensor with a batch
                dimension, the batch sizes differ, or keys / trailing shapes differ
                from the first call of this cycle.
        """
        if self._state["phase"] == "train":
            raise RuntimeError("add() is only allowed in the collect phase; purge() first")
        if len(fields) == 0:
            raise ValueError("add() needs at least one field")
        sizes = set()
        for k, t in fields.items():
            if not torch.is_tensor(t) or t.ndim == 0:
                raise ValueError(f"field {k} must be a tensor with a batch dimension")
            sizes.add(int(t.shape[0]))
        if len(sizes) > 1:
            raise ValueError("all fields must have the same batch size")
        sig = {k: (tuple(t.shape[1:]), t.dtype) for k, t in fields.items()}
        if self._state["fields"] is not None and sig != self._state["fields"]:
            raise ValueError("keys, trailing shapes or dtypes differ from the first add() of this cycle")
        self._state["fields"] = sig
        self._store.append({k: t.detach().clone() for k, t in fields.items()})
        self._state["rows"] += sizes.pop()

    def start_training(self) -> None:
        """Close the collect phase and switch to train.

        Raises:
            RuntimeError: if the buffer is empty or not in the collect phase.
        """
        if self._state["phase"] != "collect":
            raise RuntimeError("start_training(): already training")
        if not self._store:
            raise RuntimeError("start_training(): nothing was added")
        self._table = {k: torch.cat([part[k] for part in self._store]) for k in self._store[0]}
        self._store = []
        self._state["phase"] = "train"

    def minibatches(
        self, mini_batch_size: int, generator: torch.Generator | None = None
    ) -> Iterator[dict[str, torch.Tensor]]:
        """One epoch of shuffled mini-batches (train phase only).

        The order is fixed so that implementations agree:
        ``perm = torch.randperm(len(self), generator=generator)`` drawn when this
        method is called, then chunks ``perm[i : i + mini_batch_size]`` in order
        (the last may be smaller), each yielded as ``{field: tensor[chunk]}``.

        Args:
            mini_batch_size: sequences per mini-batch, ≥ 1.
            generator: a CPU ``torch.Generator`` for the permutation (None: global RNG).

        Returns:
            An iterator of dicts {field: Tensor[mini_batch, ...]}.

        Raises:
            ValueError: if ``mini_batch_size < 1`` (raised at call time).
            RuntimeError: if not in the train phase (at call time), or when the
                iterator is advanced after ``purge()``.
        """
        if not isinstance(mini_batch_size, int) or mini_batch_size < 1:
            raise ValueError("mini_batch_size must be an int >= 1")
        if self._state["phase"] != "train":
            raise RuntimeError("minibatches() is only allowed in the train phase")
        order = torch.randperm(len(self), generator=generator)
        buf, epoch, table = self, self._state["epoch"], self._table

        class _Epoch:
            def __init__(self):
                self.pos = 0
            def __iter__(self):
                return self
            def __next__(self):
                if buf._state["epoch"] != epoch:
                    raise RuntimeError("this iterator's data was purged")
                if self.pos >= order.numel():
                    raise StopIteration
                sel = order[self.pos : self.pos + mini_batch_size]
                self.pos += mini_batch_size
                return {k: v.index_select(0, sel.to(v.device)) for k, v in table.items()}

        return _Epoch()

    def purge(self) -> None:
        """Wipe everything and go back to the collect phase (the purge of Book §5.5.2).

        Mini-batch iterators made before the purge raise ``RuntimeError`` when advanced.
        """
        self._store = []
        self._table = None
        self._state = {"phase": "collect", "fields": None, "rows": 0, "epoch": self._state["epoch"] + 1}
