# Exercise stub (ex5_rollout_buffer.py): write your code here. Replace each `raise NotImplementedError(...)` with
# your code; keep the names and signatures (the graders call them).
"""Exercise 5 (stop 4): the rollout buffer and its collect → train → purge clockwork.

Book §5.5.1–5.5.3, eq. 5.13: the buffer stores, per token,
B = {(s_t, a_t, log π_θold(a_t|s_t), r_t, V(s_t))} for ONE batch of fresh
rollouts; training reuses it for K epochs of mini-batches; then it is purged
completely, because stale data breaks the clip (r_t(θ) is only meaningful
near 1.0). Unlike a replay buffer (DQN, SAC) nothing survives a cycle.

API (fixed: the graders and your exercise 7 call exactly these names; keep them):

    buf = RolloutBuffer()
    buf.phase                       # "collect" | "train"
    buf.add(**fields)               # collect phase only
    len(buf)                        # sequences stored
    buf.start_training()            # collect -> train
    buf.minibatches(mini_batch_size, generator=None)   # train phase only, one epoch
    buf.purge()                     # wipe, back to "collect"

Every field is a tensor [batch, ...] (e.g. ``logp_old=[B, T]``,
``queries=[B, P]``); a mini-batch is a dict with the same keys.
"""

from __future__ import annotations

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
        # TODO: implement the empty state: phase "collect", no stored fields, and whatever you need to invalidate iterators on purge.
        raise NotImplementedError('ex5_rollout_buffer.RolloutBuffer.__init__: implement the empty state: phase "collect", no stored fields, and whatever you need to invalidate iterators on purge.')

    @property
    def phase(self) -> str:
        """The current phase: ``"collect"`` (accepting rollouts) or ``"train"`` (serving mini-batches)."""
        # TODO: implement: return "collect" or "train".
        raise NotImplementedError('ex5_rollout_buffer.RolloutBuffer.phase: implement: return "collect" or "train".')

    def __len__(self) -> int:
        """Number of sequences (rows) stored in this cycle; 0 after ``purge``."""
        # TODO: implement: the number of sequences added since the last purge.
        raise NotImplementedError('ex5_rollout_buffer.RolloutBuffer.__len__: implement: the number of sequences added since the last purge.')

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
        # TODO: implement: check the phase (RuntimeError) and the fields (ValueError: none given, not a tensor, no batch dim, batch sizes differ, keys or trailing shapes differ from earlier calls), then store detached copies.
        raise NotImplementedError('ex5_rollout_buffer.RolloutBuffer.add: implement: check the phase (RuntimeError) and the fields (ValueError: none given, not a tensor, no batch dim, batch sizes differ, keys or trailing shapes differ from earlier calls), then store detached copies.')

    def start_training(self) -> None:
        """Close the collect phase and switch to train.

        Raises:
            RuntimeError: if the buffer is empty or not in the collect phase.
        """
        # TODO: implement: collect -> train (RuntimeError if empty or already training); concatenate what was added.
        raise NotImplementedError('ex5_rollout_buffer.RolloutBuffer.start_training: implement: collect -> train (RuntimeError if empty or already training); concatenate what was added.')

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
        # TODO: implement: validate (ValueError if mini_batch_size < 1, RuntimeError unless training) when called, draw perm = torch.randperm(len(self), generator=generator), and return an iterator of {field: tensor[perm[i:i + mini_batch_size]]} that raises RuntimeError if advanced after purge().
        raise NotImplementedError('ex5_rollout_buffer.RolloutBuffer.minibatches: implement: validate (ValueError if mini_batch_size < 1, RuntimeError unless training) when called, draw perm = torch.randperm(len(self), generator=generator), and return an iterator of {field: tensor[perm[i:i + mini_batch_size]]} that raises RuntimeError if advanced after purge().')

    def purge(self) -> None:
        """Wipe everything and go back to the collect phase (the purge of Book §5.5.2).

        Mini-batch iterators made before the purge raise ``RuntimeError`` when advanced.
        """
        # TODO: implement: drop all stored data, set the phase back to "collect", and invalidate existing iterators.
        raise NotImplementedError('ex5_rollout_buffer.RolloutBuffer.purge: implement: drop all stored data, set the phase back to "collect", and invalidate existing iterators.')
