"""Seeding the child's global random generators (child side; deterministic feedback).

A submission that draws from a global generator (``random.random()``, ``np.random.rand()``,
``torch.randperm(n)`` without the given generator) gets the same draws on every run and machine:
the worker seeds ``random``, numpy's legacy generator and torch's default one before it imports
the student's module (from the module's name) and before every request (from the test's own
seed, ``worker.request_seed``); exercise 7's harness seeds from the step's seed. Not covered
(docs/threat_model.md): ``os.urandom``, the clock and addresses (``id``); str hashing is fixed by
the fork server's ``PYTHONHASHSEED=0``.
"""

from __future__ import annotations

import functools

import torch


def seed_globals(seed: int) -> None:
    """Seed torch's, numpy's and ``random``'s global RNGs (a student who samples without the given
    generator gets the same draws on every run and machine)."""
    import random

    random.seed(seed)
    if _cpu_only_build():
        torch.default_generator.manual_seed(seed)  # all that torch.manual_seed seeds on this build
    else:
        torch.manual_seed(seed)
    try:
        import numpy
    except ImportError:  # numpy is optional for the exercises
        return
    numpy.random.seed(seed % (2**32))


@functools.lru_cache(maxsize=1)
def _cpu_only_build() -> bool:
    """True when this torch has no device but the CPU built in (no CUDA, MPS, XPU, MTIA or custom backend).

    There ``torch.manual_seed(s)`` seeds ``torch.default_generator`` and only queues seeds for devices that
    cannot exist, each queued with ``traceback.format_stack()`` of the caller: ~0.3 ms a call, ~1 ms under
    pytest's deep stacks, paid before every request of every sandboxed call (hundreds per submission).
    Seeding the default generator alone gives the same draws (``tests/sandbox/test_seeding.py``).
    """
    try:
        return not (torch.backends.cuda.is_built() or torch.backends.mps.is_built() or torch.xpu._is_compiled()
                    or torch.mtia.is_available() or hasattr(torch, torch._C._get_privateuse1_backend_name()))
    except Exception:  # an unexpected torch: seed everything as torch.manual_seed does
        return False
