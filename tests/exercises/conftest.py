"""Fixtures for the tests of solutions/, exercises/ and tools/make_exercises.py (helpers: exercises_support.py)."""

from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType

import pytest
import torch

from exercises_support import SOLUTIONS, load_folder

# The machine is shared; one thread keeps these small kernels fast and fair.
torch.set_num_threads(1)


@pytest.fixture(scope="session")
def solutions() -> dict[str, ModuleType]:
    """The worked solutions, imported once; fails loudly if one does not import.

    ``PPO_COURSE_SOLUTIONS_DIR`` points the agreement tests at another folder of
    the same modules (e.g. to check that they catch a known-buggy module).
    """
    loaded = load_folder(Path(os.environ.get("PPO_COURSE_SOLUTIONS_DIR", SOLUTIONS)))
    broken = {name: repr(mod) for name, mod in loaded.items() if isinstance(mod, BaseException)}
    assert not broken, f"solution modules failed to import: {broken}"
    return loaded  # type: ignore[return-value]
