"""The registry of the quiz's answer keys: key name → ``fn(params) -> answer`` (instructor side only).

A key function registers itself with ``@key("name")``; the families of keys
(``formula_keys``: computed with ``ppo_reference``; ``case_keys``: read off the
chapter and the bank's fixed answers) do so when ``quiz_bank.instructor.keys``
imports them, and ``keys.compute`` looks a name up here.
"""

from __future__ import annotations

from typing import Any, Callable

KEYS: dict[str, Callable[[dict[str, Any]], Any]] = {}


def key(name: str):
    """Register ``fn(params) -> answer`` as the key named ``name``."""

    def register(fn):
        KEYS[name] = fn
        return fn

    return register
