"""Wrong on purpose: a buffer that shuffles with torch's, numpy's and Python's global RNGs (numpy seeded from
the clock), and orders its rows by id() of the stored chunks and the iteration order of a set of strings."""

import random
import time

import numpy as np
import torch


class RolloutBuffer(RolloutBuffer):  # noqa: F821 - the solution's class, defined above
    def minibatches(self, mini_batch_size, generator=None):
        if not isinstance(mini_batch_size, int) or mini_batch_size < 1:
            raise ValueError("mini_batch_size must be >= 1")
        if self._phase != "train":
            raise RuntimeError("train phase only")
        np.random.seed(int(time.time() * 1e6) % 2**32)  # a new order on every run...
        order = torch.from_numpy(np.random.permutation(self._size))
        order = order[torch.randperm(self._size)]         # ...and the global torch RNG
        random.shuffle(chunk := list(range(0, self._size, mini_batch_size)))
        cycle = self._cycle

        def chunks():
            for start in sorted(chunk):
                if cycle != self._cycle:
                    raise RuntimeError("purged")
                idx = order[start:start + mini_batch_size]
                yield {name: tensor[idx] for name, tensor in self._data.items()}

        return chunks()

    def start_training(self):
        if self._phase != "collect":
            raise RuntimeError("already training")
        if self._size == 0:
            raise RuntimeError("empty")
        names = {name for name in self._chunks}  # set order: str hashes
        first = next(iter(names))
        order = sorted(range(len(self._chunks[first])), key=lambda i: id(self._chunks[first][i]))
        self._data = {name: torch.cat([self._chunks[name][i] for i in order]) for name in names}
        self._chunks = {}
        self._phase = "train"
