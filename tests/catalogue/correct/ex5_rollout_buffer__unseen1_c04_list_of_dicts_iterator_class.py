"""Correct variant (c04 of the landing-7 unseen set, written outside the project from the docstrings
alone): list-of-dicts storage, None/dict phase, purge token object, hand-written iterator class that validates at call time.
"""
EXERCISE = "ex5_rollout_buffer"
DESCRIPTION = "c04: list-of-dicts storage, None/dict phase, purge token object, hand-written iterator class that validates at call time"

from collections.abc import Iterator
import torch


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
        self._phase = "collect"
        self._rows: list[dict[str, torch.Tensor]] = []
        self._flat: dict[str, torch.Tensor] | None = None
        self._token = object()  # replaced on purge; iterators keep the one they were made with

    @property
    def phase(self) -> str:
        return "train" if self._flat is not None else "collect"

    def __len__(self) -> int:
        return sum(next(iter(d.values())).shape[0] for d in self._rows)

    def add(self, **fields: torch.Tensor) -> None:
        if self._flat is not None:
            raise RuntimeError("RolloutBuffer.add: cannot add while training; purge() first")
        if len(fields) == 0:
            raise ValueError("RolloutBuffer.add: no fields given")
        sizes = set()
        for k, v in fields.items():
            if not torch.is_tensor(v) or v.ndim == 0:
                raise ValueError(f"RolloutBuffer.add: {k!r} is not a tensor with a batch dimension")
            sizes.add(v.shape[0])
        if len(sizes) > 1:
            raise ValueError(f"RolloutBuffer.add: batch sizes differ: {sizes}")
        if self._rows:
            ref = self._rows[0]
            if ref.keys() != fields.keys():
                raise ValueError("RolloutBuffer.add: keys differ from the first add() of this cycle")
            for k, v in fields.items():
                if v.shape[1:] != ref[k].shape[1:] or v.dtype != ref[k].dtype:
                    raise ValueError(f"RolloutBuffer.add: {k!r} trailing shape/dtype differs from the first add()")
        self._rows.append({k: v.detach().clone() for k, v in fields.items()})

    def start_training(self) -> None:
        if self._flat is not None:
            raise RuntimeError("RolloutBuffer.start_training: already training")
        if not self._rows:
            raise RuntimeError("RolloutBuffer.start_training: empty buffer")
        self._flat = {k: torch.cat([d[k] for d in self._rows]) for k in self._rows[0]}

    def minibatches(
        self, mini_batch_size: int, generator: torch.Generator | None = None
    ) -> Iterator[dict[str, torch.Tensor]]:
        if not isinstance(mini_batch_size, int) or mini_batch_size < 1:
            raise ValueError(f"mini_batch_size must be an int >= 1, got {mini_batch_size!r}")
        if self._flat is None:
            raise RuntimeError("RolloutBuffer.minibatches: call start_training() first")
        n = len(self)
        perm = torch.randperm(n, generator=generator)
        token, data = self._token, self._flat
        starts = iter(range(0, n, mini_batch_size))

        buffer = self

        class _Epoch:
            def __iter__(self):
                return self

            def __next__(self):
                start = next(starts)
                if token is not buffer._token:
                    raise RuntimeError("RolloutBuffer: iterator used after purge()")
                idx = perm[start:start + mini_batch_size]
                return {k: t[idx.to(t.device)] for k, t in data.items()}

        return _Epoch()

    def purge(self) -> None:
        self._rows = []
        self._flat = None
        self._token = object()
