"""The isolated runner for untrusted student code (trusted, parent side).

Public API (fixed in docs/ARCHITECTURE.md, "The sandbox")::

    from grader.sandbox import Sandbox, Limits, StudentError, StudentTimeout, StudentCrash, StudentImportError

Student code runs in a child process forked from a clean fork server
(``sandbox_child.zygote``), one per exercise, confined by
``sandbox_child.isolate``; values cross as data only
(``sandbox_child.codec``). The threat model is docs/threat_model.md.
"""

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
