"""Stop 4: the on-policy rollout buffer and its collect → train → purge clockwork (Book §5.5.1–5.5.3, eq. 5.13).

Usage (the interface of ARCHITECTURE.md, shared with exercise 5)::

    buf = RolloutBuffer()
    buf.add(queries=q, responses=resp, mask=mask, logp_old=lp, values=v, ...)  # collect
    buf.start_training()                                                       # collect -> train
    for epoch in range(ppo_epochs):
        for mini_batch in buf.minibatches(16, generator=gen):                   # train
            ...
    buf.purge()                                                                # wipe -> collect

A replay buffer (DQN, SAC) keeps transitions and samples them for many
updates; this one is purged after every cycle, because the ratio r_t(θ) is
only meaningful while θ is close to the θ_old that generated the data.
"""

from __future__ import annotations

from collections.abc import Iterator

import operator

import torch

__all__ = ["RolloutBuffer"]


class RolloutBuffer:
    """Per-sequence rollout storage with a strict collect → train → purge cycle (Book eq. 5.13).

    Each field is a tensor ``[batch, ...]`` (e.g. ``responses`` [batch, resp_len]
    long, ``logp_old`` [batch, resp_len] float); row b of every field belongs
    to sequence b. Stored tensors are detached copies, so later in-place edits
    of the caller's tensors cannot change the rollout.

    Attributes:
        phase: ``"collect"`` (``add`` allowed) or ``"train"`` (``minibatches`` allowed).
    """

    def __init__(self) -> None:
        """An empty buffer in the collect phase."""
        self.phase: str = "collect"
        self._chunks: dict[str, list[torch.Tensor]] = {}
        self._data: dict[str, torch.Tensor] = {}
        self._size = 0
        self._cycle = 0  # bumped by purge(); iterators of an older cycle refuse to run

    # ------------------------------------------------------------------ collect

    def add(self, **fields: torch.Tensor) -> None:
        """Append a batch of sequences; every field is ``[batch, ...]`` with one shared ``batch``.

        The first call of a cycle fixes the field names and, per field, the
        trailing shape, dtype and device; later calls must repeat them.

        Raises:
            RuntimeError: if called in the train phase (the data would be off-policy).
            ValueError: if no field is given, a field is not a tensor with a
                batch dimension, the batch sizes differ, or the names, trailing
                shapes, dtypes or devices differ from this cycle's first call.
        """
        if self.phase != "collect":
            raise RuntimeError(
                "RolloutBuffer.add: the buffer is in the train phase; purge() it before collecting "
                "new rollouts (adding now would mix data from a different policy into this cycle)"
            )
        if not fields:
            raise ValueError("RolloutBuffer.add: give at least one field, e.g. add(responses=..., logp_old=...)")
        for name, t in fields.items():
            if not isinstance(t, torch.Tensor) or t.dim() == 0:
                raise ValueError(f"RolloutBuffer.add: field `{name}` must be a tensor [batch, ...], got "
                                 f"{type(t).__name__ if not isinstance(t, torch.Tensor) else 'a 0-dim tensor'}")
        sizes = {name: t.shape[0] for name, t in fields.items()}
        if len(set(sizes.values())) != 1:
            raise ValueError(f"RolloutBuffer.add: all fields need the same batch size, got {sizes}")
        if self._chunks:
            if set(fields) != set(self._chunks):
                raise ValueError(
                    f"RolloutBuffer.add: fields {sorted(fields)} differ from this cycle's {sorted(self._chunks)}"
                )
            for name, t in fields.items():
                first = self._chunks[name][0]
                if t.shape[1:] != first.shape[1:] or t.dtype != first.dtype or t.device != first.device:
                    raise ValueError(
                        f"RolloutBuffer.add: field `{name}` is {tuple(t.shape[1:])} {t.dtype} on {t.device} per "
                        f"sequence, but earlier it was {tuple(first.shape[1:])} {first.dtype} on {first.device}"
                    )
        for name, t in fields.items():
            self._chunks.setdefault(name, []).append(t.detach().clone())
        self._size += next(iter(sizes.values()))

    def __len__(self) -> int:
        """Number of sequences stored in this cycle."""
        return self._size

    @property
    def fields(self) -> tuple[str, ...]:
        """Names of the stored fields (empty before the first ``add``)."""
        return tuple(self._chunks)

    # ------------------------------------------------------------------ train

    def start_training(self) -> None:
        """Freeze the rollout: collect → train.

        Raises:
            RuntimeError: if the buffer is empty or not in the collect phase.
        """
        if self.phase != "collect":
            raise RuntimeError("RolloutBuffer.start_training: already in the train phase")
        if self._size == 0:
            raise RuntimeError("RolloutBuffer.start_training: the buffer is empty; add() rollouts first")
        self._data = {name: torch.cat(chunks) if len(chunks) > 1 else chunks[0] for name, chunks in self._chunks.items()}
        self.phase = "train"

    def minibatches(
        self, mini_batch_size: int, generator: torch.Generator | None = None
    ) -> Iterator[dict[str, torch.Tensor]]:
        """One epoch over the rollout in shuffled mini-batches.

        The order is ``perm = torch.randperm(len(self), generator=generator)``;
        mini-batch i holds sequences ``perm[i·mbs : (i+1)·mbs]`` of every field
        (the last one may be smaller). Reproducible for a seeded generator.

        Args:
            mini_batch_size: sequences per mini-batch (≥ 1).
            generator: the torch.Generator for the permutation (its device is used).

        Returns:
            An iterator of ``{field: tensor[mbs, ...]}`` dicts (index copies).

        Raises:
            RuntimeError: at once if not in the train phase; when advanced after
                a ``purge()`` (the data it would yield is gone).
            ValueError: if ``mini_batch_size`` is not an integer ≥ 1.
        """
        if self.phase != "train":
            raise RuntimeError(
                "RolloutBuffer.minibatches: the buffer is in the collect phase; call start_training() first"
            )
        try:
            size = operator.index(mini_batch_size)  # int, numpy or 0-dim integer tensor
        except TypeError:
            size = None
        if size is None or isinstance(mini_batch_size, bool) or size < 1:
            raise ValueError(f"RolloutBuffer.minibatches: `mini_batch_size` must be an integer ≥ 1, got {mini_batch_size!r}")
        device = generator.device if generator is not None else torch.device("cpu")
        perm = torch.randperm(self._size, generator=generator, device=device)
        return self._iterate(perm, size, self._cycle)

    def _iterate(self, perm: torch.Tensor, size: int, cycle: int) -> Iterator[dict[str, torch.Tensor]]:
        start = 0
        while True:
            # Checked on every advance, including the one that would end the epoch.
            if self._cycle != cycle:
                raise RuntimeError(
                    "RolloutBuffer: this mini-batch iterator belongs to a purged rollout; its data is gone "
                    "(on-policy data must not be reused after purge())"
                )
            if start >= len(perm):
                return
            idx = perm[start:start + size]
            yield {name: t[idx.to(t.device)] for name, t in self._data.items()}
            start += size

    # ------------------------------------------------------------------ purge

    def purge(self) -> None:
        """Wipe every stored tensor and return to the collect phase (Book §5.5.2: "purge").

        Iterators made by ``minibatches`` before the purge raise ``RuntimeError``
        when advanced afterwards.
        """
        self._chunks = {}
        self._data = {}
        self._size = 0
        self._cycle += 1
        self.phase = "collect"

    def __repr__(self) -> str:
        return f"RolloutBuffer(phase={self.phase!r}, sequences={self._size}, fields={list(self._chunks)})"
