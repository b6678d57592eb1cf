"""Answer keys of the parametric questions: ``compute(key_name, params)`` (instructor side only).

Never shipped to students: ``quiz_bank.export.export_public`` leaves this
file and the rest of ``instructor/`` out, and the engine treats its absence as
"no keys installed" (responses are then recorded, not checked). Importing this
module registers every key (``quiz_bank.instructor.key_registry``) of both
families: ``formula_keys`` (computed with the trusted ``ppo_reference`` on
small float64 tensors, so that a key is never typed by hand) and
``case_keys`` (drawn cases, read off the chapter and the bank's fixed answers).

``ppo_reference`` (and torch) are imported inside the key functions, so
importing this module is cheap and works before any key is needed.
"""

from __future__ import annotations

from typing import Any

from quiz_bank.instructor import case_keys, formula_keys  # noqa: F401 - importing them registers their keys
from quiz_bank.instructor.key_registry import KEYS


def compute(key_name: str, params: dict[str, Any]) -> Any:
    """The key of one variant.

    Raises:
        KeyError: if ``key_name`` is not registered (``quiz validate`` checks every name).
    """
    if key_name not in KEYS:
        raise KeyError(f"unknown key function {key_name!r}; known: {', '.join(sorted(KEYS))}")
    return KEYS[key_name](params)
