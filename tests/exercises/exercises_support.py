"""Helpers for the tests of solutions/, exercises/ and tools/make_exercises.py.

``solutions/`` and ``exercises/`` are plain module folders holding modules of
the same names (``ex1_ratio`` ... ``ex7_ppo_step``), and ex7 imports its
siblings by those plain names. ``load_folder`` therefore imports a folder's
modules with the folder first on ``sys.path`` and restores ``sys.path`` and
``sys.modules`` afterwards: the returned module objects keep the siblings they
were imported with, and no other test sees them.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

import torch

REPO_ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = REPO_ROOT / "solutions"
EXERCISES = REPO_ROOT / "exercises"

# The contract's table: module stem -> public names (CONTRACT.md, "Exercises").
CONTRACT_NAMES: dict[str, tuple[str, ...]] = {
    "ex1_ratio": ("logprobs_from_logits", "probability_ratio"),
    "ex2_clipped_loss": ("clipped_surrogate_loss",),
    "ex3_full_loss": ("clipped_value_loss", "entropy_from_logits", "ppo_loss"),
    "ex4_gae": ("compute_gae", "whiten"),
    "ex5_rollout_buffer": ("RolloutBuffer",),
    "ex6_kl_reward": ("per_token_kl", "kl_shaped_rewards", "AdaptiveKLController"),
    "ex7_ppo_step": ("ppo_step",),
}


def load_folder(folder: Path, names=tuple(CONTRACT_NAMES)) -> dict[str, ModuleType | BaseException]:
    """Import ``names`` from ``folder`` in isolation; a module that fails to import maps to its exception."""
    saved_path = list(sys.path)
    saved_modules = {name: sys.modules.pop(name) for name in list(sys.modules) if name in CONTRACT_NAMES}
    loaded: dict[str, ModuleType | BaseException] = {}
    try:
        sys.path.insert(0, str(folder))
        for name in names:
            try:
                loaded[name] = importlib.import_module(name)
            except Exception as exc:  # reported by the test that needs the module
                loaded[name] = exc
    finally:
        sys.path[:] = saved_path
        for name in CONTRACT_NAMES:
            sys.modules.pop(name, None)
        sys.modules.update(saved_modules)
    return loaded



import sys as _sys

_sys.path.insert(0, str(REPO_ROOT / "tools"))
import make_exercises as mk  # noqa: E402  (tools/ is a script folder, not a package)
