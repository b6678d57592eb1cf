"""The isolated runner for untrusted student code (trusted, parent side).

Public API (fixed in docs/ARCHITECTURE.md, "The sandbox")::

    from grader.sandbox import Sandbox, Limits, StudentError, StudentTimeout, StudentCrash, StudentImportError

Student code runs in a child process forked from a clean fork server
(``sandbox_child.zygote``), one per exercise, confined by
``sandbox_child.isolate``; values cross as data only
(``sandbox_child.codec``). The threat model is docs/threat_model.md.
"""

import importlib
from typing import TYPE_CHECKING

#: Where each public name lives. Imported on first use (PEP 562), so that ``grader.sandbox.forkserver_client``
#: (which starts the fork server) loads without ``import torch``: a grader process can start its fork server
#: before it pays its own imports.
_HOMES = {
    "SandboxError": "errors", "StudentCrash": "errors", "StudentError": "errors", "StudentFailure": "errors",
    "StudentImportError": "errors", "StudentIteratorExhausted": "errors", "StudentTimeout": "errors",
    "ForkServerClient": "forkserver_client", "KnownGood": "known_good", "Limits": "limits",
    "RemoteFunction": "remote", "RemoteModule": "remote", "RemoteObject": "remote_object", "Sandbox": "sandbox",
}

if TYPE_CHECKING:
    from grader.sandbox.errors import (
        SandboxError,
        StudentCrash,
        StudentError,
        StudentFailure,
        StudentImportError,
        StudentIteratorExhausted,
        StudentTimeout,
    )
    from grader.sandbox.forkserver_client import ForkServerClient
    from grader.sandbox.known_good import KnownGood
    from grader.sandbox.limits import Limits
    from grader.sandbox.remote import RemoteFunction, RemoteModule
    from grader.sandbox.remote_object import RemoteObject
    from grader.sandbox.sandbox import Sandbox


def __getattr__(name: str):
    """The public name ``name``, imported from its module on first use.

    Raises:
        AttributeError: if ``name`` is not one of ``__all__``.
    """
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'grader.sandbox' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"grader.sandbox.{home}"), name)
    globals()[name] = value
    return value


__all__ = [
    "Sandbox",
    "Limits",
    "KnownGood",
    "RemoteModule",
    "RemoteObject",
    "RemoteFunction",
    "ForkServerClient",
    "StudentFailure",
    "StudentError",
    "StudentTimeout",
    "StudentCrash",
    "StudentImportError",
    "StudentIteratorExhausted",
    "SandboxError",
]
