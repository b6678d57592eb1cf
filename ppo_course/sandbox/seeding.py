"""Seeding the child's global random generators (child side; issue 16, determinism of feedback).

A submission that draws from a global generator (``random.random()``, ``np.random.rand()``,
``torch.randperm(n)`` without the given generator) gets the same draws on every run and machine:
the worker seeds ``random``, numpy's legacy generator and torch's default one before it imports
the student's module (from the module's name) and before every request (from the test's own
seed, ``worker.request_seed``); exercise 7's harness seeds from the step's seed. Not covered
(docs/threat_model.md): ``os.urandom``, the clock and addresses (``id``); str hashing is fixed by
the fork server's ``PYTHONHASHSEED=0``.
"""

from __future__ import annotations

import torch


def seed_globals(seed: int) -> None:
    """Seed torch's, numpy's and ``random``'s global RNGs (a student who samples without the given
    generator gets the same draws on every run and machine; issue 16, determinism of feedback)."""
    import random

    random.seed(seed)
    torch.manual_seed(seed)
    try:
        import numpy
    except ImportError:  # numpy is optional for the exercises
        return
    numpy.random.seed(seed % (2**32))
