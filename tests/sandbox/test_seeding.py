"""``seed_globals`` on a CPU-only torch seeds the default generator alone: the same draws as ``torch.manual_seed``."""

from __future__ import annotations

import random

import numpy
import torch

from ppo_course.sandbox import seeding


def _draws() -> tuple:
    return (torch.rand(5).tolist(), torch.randperm(7).tolist(), random.random(), float(numpy.random.rand()))


def test_seed_globals_gives_the_draws_of_torch_manual_seed():
    """Independent implementation: torch.manual_seed + random.seed + numpy.random.seed, then the same draws."""
    for seed in (0, 7, 2**40 + 3):
        torch.manual_seed(seed)
        random.seed(seed)
        numpy.random.seed(seed % 2**32)
        expected = _draws()
        torch.manual_seed(seed + 1)  # something else first, so equal draws come from seed_globals
        seeding.seed_globals(seed)
        assert _draws() == expected


def test_this_build_is_recognised_as_cpu_only():
    """The project installs the CPU wheel (Makefile): the fast path is the one taken here."""
    assert seeding._cpu_only_build() == (not torch.backends.cuda.is_built() and not torch.backends.mps.is_built())
