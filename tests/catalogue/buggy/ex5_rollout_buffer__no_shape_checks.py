"""Buggy RolloutBuffer: add() validates nothing.

Inconsistent adds are stored, and the error (if any) surfaces later in
torch.cat or as misaligned rows.
"""
EXERCISE = "ex5_rollout_buffer"
DIAGNOSIS = "buffer_no_validation"
DESCRIPTION = "RolloutBuffer.add accepts fields with different batch sizes, new keys or other trailing shapes"
SEEN_IN = "classroom mistake (validation left for later); torch.cat then fails far from the cause"
ALSO = "buffer_inconsistent_fields"  # the same missing checks, across add() calls

import torch


class RolloutBuffer:
    """Rollout buffer (Book eq. 5.13): collect -> train -> purge."""

    def __init__(self):
        self.phase = "collect"
        self._data = {}          # field -> list of [B_i, ...] chunks
        self._epoch_id = 0       # bumped by purge(); live iterators compare against it

    def add(self, **fields):
        if self.phase != "collect":
            raise RuntimeError(f"add() during the {self.phase!r} phase; call purge() first")
        if not fields:
            raise ValueError("add() needs at least one field")
        for k, v in fields.items():
            self._data.setdefault(k, []).append(v.detach().clone())

    def __len__(self):
        if not self._data:
            return 0
        return sum(chunk.shape[0] for chunk in next(iter(self._data.values())))

    def start_training(self):
        if self.phase != "collect":
            raise RuntimeError("start_training() needs the collect phase")
        if len(self) == 0:
            raise RuntimeError("start_training() on an empty buffer")
        self.phase = "train"

    def minibatches(self, mini_batch_size, generator=None):
        if self.phase != "train":
            raise RuntimeError("minibatches() needs the train phase; call start_training()")
        if mini_batch_size < 1:
            raise ValueError(f"mini_batch_size must be >= 1, got {mini_batch_size}")
        data = {k: torch.cat(chunks) for k, chunks in self._data.items()}
        perm = torch.randperm(len(self), generator=generator)
        return self._iterate(data, perm, mini_batch_size, self._epoch_id)

    def _iterate(self, data, perm, mini_batch_size, epoch_id):
        for start in range(0, len(perm), mini_batch_size):
            if epoch_id != self._epoch_id:
                raise RuntimeError("the buffer was purged while this iterator was alive")
            idx = perm[start:start + mini_batch_size]
            yield {k: v[idx] for k, v in data.items()}

    def purge(self):
        self._data = {}
        self.phase = "collect"
        self._epoch_id += 1
