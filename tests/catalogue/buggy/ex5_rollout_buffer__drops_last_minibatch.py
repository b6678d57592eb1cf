"""Buggy RolloutBuffer: drops the last, smaller mini-batch.

With 7 rows and mini-batches of 3 one row is never trained on.
"""
EXERCISE = "ex5_rollout_buffer"
DIAGNOSIS = "buffer_drops_last_minibatch"
DESCRIPTION = "RolloutBuffer.minibatches drops the last, smaller mini-batch (drop_last=True)"
SEEN_IN = "classroom mistake (DataLoader(drop_last=True) habit); the contract keeps the last chunk"

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
        sizes = {k: v.shape[0] for k, v in fields.items()}
        if len(set(sizes.values())) != 1:
            raise ValueError(f"fields have different batch sizes: {sizes}")
        if self._data:
            if set(fields) != set(self._data):
                raise ValueError(f"fields {sorted(fields)} differ from {sorted(self._data)}")
            for k, v in fields.items():
                if v.shape[1:] != self._data[k][0].shape[1:]:
                    raise ValueError(f"field {k!r} has trailing shape {tuple(v.shape[1:])}")
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
        for start in range(0, len(perm) - mini_batch_size + 1, mini_batch_size):
            if epoch_id != self._epoch_id:
                raise RuntimeError("the buffer was purged while this iterator was alive")
            idx = perm[start:start + mini_batch_size]
            yield {k: v[idx] for k, v in data.items()}

    def purge(self):
        self._data = {}
        self.phase = "collect"
        self._epoch_id += 1
