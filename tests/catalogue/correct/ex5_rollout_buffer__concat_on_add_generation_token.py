"""Correct variant: concatenates on every add(), and iterators hold a token that purge() invalidates.

Different storage (one growing tensor per field instead of chunk lists) and a
different staleness mechanism (a shared mutable token instead of a counter).
"""
EXERCISE = "ex5_rollout_buffer"
DESCRIPTION = "RolloutBuffer storing one concatenated tensor per field; purge() flips a token that live iterators check"

import torch


class _Token:
    """Shared between the buffer and the iterators of one cycle; purge() kills it."""

    def __init__(self):
        self.alive = True


class RolloutBuffer:
    def __init__(self):
        self._fields = None          # dict[str, Tensor] once something was added
        self._training = False
        self._token = _Token()

    @property
    def phase(self):
        return "train" if self._training else "collect"

    def __len__(self):
        return 0 if self._fields is None else next(iter(self._fields.values())).shape[0]

    def add(self, **fields):
        if self._training:
            raise RuntimeError("RolloutBuffer.add: the buffer is training; purge() before collecting again")
        if not fields:
            raise ValueError("RolloutBuffer.add: no fields given")
        if any(not isinstance(v, torch.Tensor) or v.dim() < 1 for v in fields.values()):
            raise ValueError("RolloutBuffer.add: every field must be a tensor [batch, ...]")
        if len({v.shape[0] for v in fields.values()}) != 1:
            raise ValueError("RolloutBuffer.add: the fields disagree on the batch size")
        if self._fields is None:
            self._fields = {k: v.detach().clone() for k, v in fields.items()}
            return
        if fields.keys() != self._fields.keys():
            raise ValueError(f"RolloutBuffer.add: expected fields {sorted(self._fields)}, got {sorted(fields)}")
        for k, v in fields.items():
            if v.shape[1:] != self._fields[k].shape[1:] or v.dtype != self._fields[k].dtype:
                raise ValueError(f"RolloutBuffer.add: field {k!r} changed its trailing shape or dtype")
        self._fields = {k: torch.cat([self._fields[k], fields[k].detach()]) for k in self._fields}

    def start_training(self):
        if self._training or len(self) == 0:
            raise RuntimeError("RolloutBuffer.start_training: needs a non-empty buffer in the collect phase")
        self._training = True

    def minibatches(self, mini_batch_size, generator=None):
        if not self._training:
            raise RuntimeError("RolloutBuffer.minibatches: call start_training() first")
        if mini_batch_size < 1:
            raise ValueError("RolloutBuffer.minibatches: mini_batch_size must be at least 1")
        perm = torch.randperm(len(self), generator=generator)
        chunks = torch.split(perm, mini_batch_size)
        token, fields = self._token, self._fields

        def iterate():
            for idx in chunks:
                if not token.alive:
                    raise RuntimeError("RolloutBuffer: this iterator was made before purge()")
                yield {k: v.index_select(0, idx) for k, v in fields.items()}

        return iterate()

    def purge(self):
        self._token.alive = False
        self._token = _Token()
        self._fields = None
        self._training = False
