"""Exceptions the sandbox raises to the graders (the student's own exception classes never cross)."""

from __future__ import annotations


class StudentFailure(Exception):
    """Base of every failure caused by the submission (catch this to score 0 for one call)."""


class StudentError(StudentFailure):
    """The student's code raised an exception (any type, ``SystemExit`` included).

    Attributes:
        type_name: the exception's class name as the child reported it (``"ValueError"``).
        message: ``str(exc)`` in the child (bounded).
        traceback: the formatted traceback from the child (student frames; may be empty).
    """

    def __init__(self, type_name: str, message: str, traceback: str = "") -> None:
        super().__init__(f"{type_name}: {message}")
        self.type_name = type_name
        self.message = message
        self.traceback = traceback


class StudentIteratorExhausted(StudentFailure, StopIteration):
    """The student's iterator ended (``next`` in the child raised StopIteration).

    Still a ``StopIteration``, so that ``for`` loops and ``list()`` over a remote
    iterator end normally; when it escapes a test (a ``next()`` where the test
    expected an item or an error), the provider classifies it as the student's
    (``iterator_ended_early``), never as a grader error.
    """


class StudentTimeout(StudentFailure):
    """A call (or the import) ran past its wall-clock limit; the child was killed."""


class StudentCrash(StudentFailure):
    """The child died (os._exit, a signal, a resource limit, a flood of output) or broke the protocol."""


class StudentImportError(StudentFailure):
    """The module could not be loaded: missing file, exception or exit at import, import time-out.

    Attributes:
        cause: ``"missing"``, ``"error"``, ``"timeout"`` or ``"crash"``.
        type_name: the exception's class name when ``cause == "error"``, else "".
    """

    def __init__(self, message: str, cause: str = "error", type_name: str = "", traceback: str = "") -> None:
        super().__init__(message)
        self.cause = cause
        self.type_name = type_name
        self.traceback = traceback


class SandboxError(RuntimeError):
    """The grading machinery itself failed (fork server died, set-up refused): not the student's fault."""
