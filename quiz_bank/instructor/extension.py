"""The instructor side of the quiz, as the public engine's extension (``quiz_bank.extension_point``).

The public quiz reaches the answer keys (``keys``), the course's attempt policy (``server.policy``) and
the server's verbs (``server.cli``) only through this module, which it loads by name on an instructor's
install. Importing it is cheap: the key functions import ``ppo_reference`` when called, and the server's
verbs import FastAPI and the store when run.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from quiz_bank.instructor import key_registry, keys
from quiz_bank.instructor.server import cli as server_cli
from quiz_bank.instructor.server import policy

#: The server's verbs of ``ppo-course quiz``: name -> ``run(args) -> int`` (``server.cli``).
SERVER_VERBS: dict[str, Callable[[argparse.Namespace], int]] = {
    name: getattr(server_cli, name) for name in ("serve", "tokens", "revoke", "export", "migrate", "backup", "restore")}


def compute(key_name: str, params: dict[str, Any]) -> Any:
    """The key of one variant of a parametric question (``keys.compute``).

    Raises:
        KeyError: if ``key_name`` is not registered.
    """
    return keys.compute(key_name, params)


def key_names() -> frozenset[str]:
    """The names of every registered key function (what a bank's ``key:`` fields may name)."""
    return frozenset(key_registry.KEYS)


def load_policy(path: Path | str | None = None) -> policy.PolicyFile:
    """The course's attempt policy (``path`` None: ``server/attempt_policy.yaml``).

    Raises:
        ValueError: if the policy file is unreadable or invalid (the message names it).
    """
    return policy.load_policy(path)


def add_server_arguments(verbs: argparse._SubParsersAction) -> None:
    """Add the server's verbs (``SERVER_VERBS``) to ``ppo-course quiz``'s sub-parsers."""
    server_cli.add_arguments(verbs)
