"""Buggy (w33 of the unseen3 set, written outside the project from the docstrings alone):
purge() clears the concatenated training data but not the chunks add() collected: a purge in the collect phase keeps the old rows.

Clause broken: “purge: Wipe everything and go back to the collect phase”
Expected diagnosis (the set's manifest): After purge() in the collect phase, earlier rows came back at start_training(): purge must drop everything added.
Graded as: buffer_use_after_purge (landing 8's grader did not grade a purge while collecting: full marks).
"""
from collections.abc import Iterator
import torch

EXERCISE = "ex5_rollout_buffer"
DIAGNOSIS = "buffer_use_after_purge"
DESCRIPTION = "purge() in the collect phase keeps the rows added so far"
SEEN_IN = "the unseen3 set (w33), written outside the project from the docstrings alone"


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
        ### BEGIN SOLUTION
        # TODO: implement the empty state: phase "collect", no stored fields, and whatever you need to invalidate iterators on purge.
        self._phase = "collect"
        self._chunks: dict[str, list[torch.Tensor]] = {}  # field -> one tensor per add() call
        self._data: dict[str, torch.Tensor] = {}  # field -> [N, ...], concatenated at start_training
        self._size = 0
        self._cycle = 0  # bumped by purge(): iterators from an older cycle refuse to continue
        ### END SOLUTION

    @property
    def phase(self) -> str:
        """The current phase: ``"collect"`` (accepting rollouts) or ``"train"`` (serving mini-batches)."""
        ### BEGIN SOLUTION
        # TODO: implement: return "collect" or "train".
        return self._phase
        ### END SOLUTION

    def __len__(self) -> int:
        """Number of sequences (rows) stored in this cycle; 0 after ``purge``."""
        ### BEGIN SOLUTION
        # TODO: implement: the number of sequences added since the last purge.
        return self._size
        ### END SOLUTION

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
        ### BEGIN SOLUTION
        # TODO: implement: check the phase (RuntimeError) and the fields (ValueError: none given, not a tensor, no batch dim, batch sizes differ, keys or trailing shapes differ from earlier calls), then store detached copies.
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
            self._chunks.setdefault(name, []).append(value.detach().clone())
        self._size += next(iter(batch_sizes.values()))
        ### END SOLUTION

    def start_training(self) -> None:
        """Close the collect phase and switch to train.

        Raises:
            RuntimeError: if the buffer is empty or not in the collect phase.
        """
        ### BEGIN SOLUTION
        # TODO: implement: collect -> train (RuntimeError if empty or already training); concatenate what was added.
        if self._phase != "collect":
            raise RuntimeError("RolloutBuffer.start_training: already in the train phase")
        if self._size == 0:
            raise RuntimeError("RolloutBuffer.start_training: the buffer is empty; add() rollouts first")
        self._data = {name: torch.cat(chunks, dim=0) for name, chunks in self._chunks.items()}
        self._chunks = {}
        self._phase = "train"
        ### END SOLUTION

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
        ### BEGIN SOLUTION
        # TODO: implement: validate (ValueError if mini_batch_size < 1, RuntimeError unless training) when called, draw perm = torch.randperm(len(self), generator=generator), and return an iterator of {field: tensor[perm[i:i + mini_batch_size]]} that raises RuntimeError if advanced after purge().
        if not isinstance(mini_batch_size, int) or mini_batch_size < 1:
            raise ValueError(f"RolloutBuffer.minibatches: mini_batch_size must be an int >= 1, got {mini_batch_size!r}")
        if self._phase != "train":
            raise RuntimeError(
                "RolloutBuffer.minibatches: the buffer is in the collect phase; call start_training() first"
            )
        perm = torch.randperm(self._size, generator=generator)
        cycle = self._cycle

        def chunks() -> Iterator[dict[str, torch.Tensor]]:
            for start in range(0, len(perm), mini_batch_size):
                # Checked before every chunk: purged data must never reach an update.
                if cycle != self._cycle:
                    raise RuntimeError("RolloutBuffer: this mini-batch iterator was made before purge(); its data is gone")
                idx = perm[start : start + mini_batch_size]
                yield {name: tensor[idx.to(tensor.device)] for name, tensor in self._data.items()}

        return chunks()
        ### END SOLUTION

    def purge(self) -> None:
        """Wipe everything and go back to the collect phase (the purge of Book §5.5.2).

        Mini-batch iterators made before the purge raise ``RuntimeError`` when advanced.
        """
        ### BEGIN SOLUTION
        # TODO: implement: drop all stored data, set the phase back to "collect", and invalidate existing iterators.
        self._data = {}
        self._size = 0
        self._phase = "collect"
        self._cycle += 1
