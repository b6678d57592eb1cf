"""Exceptions the sandbox raises to the graders (the student's own exception classes never cross).

The child is hostile, so what it reports about an exception is decoded here, in
the parent, through a fixed filter (exception text must not become a covert channel):

* the type name is one of `ALLOWED_EXCEPTION_NAMES` (built-in exceptions); any other
  name becomes the child's reported built-in base if that is allowed, else "Exception";
* the message is capped (`MAX_MESSAGE_CHARS`) and stripped of control characters;
  it is kept for the grader's own classification (e.g. "has no attribute") and shown
  to the student only where `echo` is True: never in a child that had known-good
  callbacks (the reference's outputs could ride in it), never in hidden feedback
  (`grader.grade._test_output` shows hidden tests the type name only);
* the child's traceback is dropped (it is entirely child-chosen text).
"""

from __future__ import annotations

import re
import unicodedata

from ppo_course.text_safety import cap

#: The only exception type names that may leave the child (built-ins a student's code plausibly raises).
ALLOWED_EXCEPTION_NAMES = frozenset({
    "Exception", "ArithmeticError", "AssertionError", "AttributeError", "BufferError", "EOFError",
    "FloatingPointError", "ImportError", "IndexError", "KeyError", "LookupError", "MemoryError",
    "ModuleNotFoundError", "NameError", "NotImplementedError", "OSError", "OverflowError", "RecursionError",
    "RuntimeError", "StopIteration", "StopAsyncIteration", "SyntaxError", "IndentationError", "TabError",
    "SystemError", "SystemExit", "KeyboardInterrupt", "GeneratorExit", "TimeoutError", "TypeError",
    "UnboundLocalError", "UnicodeError", "UnicodeDecodeError", "UnicodeEncodeError", "ValueError",
    "ZeroDivisionError", "FileNotFoundError", "PermissionError",
})
#: How many characters of a child's exception message the parent keeps.
MAX_MESSAGE_CHARS = 500
#: Characters of a child's message kept per character of the cap before NFC (see `safe_message`).
NFC_SLACK = 4


def safe_type_name(name: object, base: object = None) -> str:
    """The exception name the parent reports: `name` if allowed, else the allowed `base`, else "Exception".

    Args:
        name: the type name the child sent (anything: the child is hostile).
        base: the child's nearest built-in base class name (its pre-filter), or None.
    """
    if isinstance(name, str) and name in ALLOWED_EXCEPTION_NAMES:
        return name
    if isinstance(base, str) and base in ALLOWED_EXCEPTION_NAMES:
        return base
    return "Exception"


def safe_message(text: object, limit: int = MAX_MESSAGE_CHARS) -> str:
    """A child's message, capped at `limit` characters ("… (truncated)") without control or format characters
    (``ppo_course.text_safety.cap``: the one list of what is replaced).

    Cut to ``NFC_SLACK * limit`` characters before NFC: canonical reordering is quadratic in a run of
    combining marks (CPython sorts them by insertion), so a message of a few MB took the grader hours.
    NFC joins at most three characters into one (a Hangul syllable), so a longer text still ends "… (truncated)".
    """
    if not isinstance(text, str):
        return ""
    text = text[: NFC_SLACK * limit + 1]
    return cap(unicodedata.normalize("NFC", text.encode("utf-8", "replace").decode("utf-8", "replace")), limit)


class StudentFailure(Exception):
    """Base of every failure caused by the submission (catch this to score 0 for one call)."""


#: A file name the parent accepts from a child's SyntaxError: a plain module file name, no folder.
_PY_FILE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}\.py")
#: The largest line number the parent accepts from a child (a bounded int: no covert channel beyond it).
MAX_LINENO = 1_000_000


def safe_location(lineno: object, filename: object) -> tuple[int | None, str | None]:
    """(line, file) of a child's SyntaxError as the parent keeps them, or (None, None).

    Args:
        lineno: what the child sent (anything): kept only as an int 1..`MAX_LINENO` (not a bool).
        filename: what the child sent: kept only as a plain module file name ("helper.py", `_PY_FILE`).

    Returns:
        both values, or (None, None) unless both pass (a place needs the two, as ``str(SyntaxError)``).
    """
    if type(lineno) is not int or not 1 <= lineno <= MAX_LINENO:
        return None, None
    if not isinstance(filename, str) or not _PY_FILE.fullmatch(filename):
        return None, None
    return lineno, filename


class StudentError(StudentFailure):
    """The student's code raised an exception (any type, ``SystemExit`` included).

    Attributes:
        type_name: an allowed built-in name (`safe_type_name` of what the child reported).
        message: ``str(exc)`` in the child, capped and cleaned (`safe_message`); for the
            grader's classification, shown to the student only when `echo` is True.
        traceback: always "" (the child's traceback is its own text; it never leaves).
        echo: False when the message must not be shown to anyone (a child with known-good pieces).
    """

    def __init__(self, type_name: str, message: str, traceback: str = "", *, base: str | None = None,
                 echo: bool = True) -> None:
        self.type_name = safe_type_name(type_name, base)
        self.message = safe_message(message)
        self.traceback = ""
        self.echo = bool(echo)
        super().__init__(self.shown())

    def shown(self) -> str:
        """What may be shown of this error: "Type: message", or the type alone when `echo` is False."""
        return f"{self.type_name}: {self.message}" if self.echo else self.type_name

    @classmethod
    def from_reply(cls, reply: dict, *, echo: bool = True) -> "StudentError":
        """Decode the child's ``err`` reply (type, base, message) through the parent's filter."""
        return cls(reply.get("type"), reply.get("message"), base=reply.get("base"), echo=echo)


class StudentProtocolError(StudentError, TypeError):
    """The student's object broke a Python protocol the grader relies on (``len()`` of something that is not
    an int from 0 to ``sys.maxsize``). A ``StudentError`` (the student's, never ``grader_error``) and a
    ``TypeError`` (so that ``list()``'s length probe treats the object as unsized, as Python does).
    Without it, Python's own ``len()`` would raise TypeError/OverflowError inside a test."""

    def __init__(self, message: str) -> None:
        super().__init__("TypeError", message)


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
        type_name: the exception's (allowed) class name when ``cause == "error"``, else "".
        lineno, filename: where a SyntaxError is (a line 1..`MAX_LINENO`, a plain "name.py"), both
            or neither (None); only from a child whose message may be shown (``echo``).
    """

    def __init__(self, message: str, cause: str = "error", type_name: str = "", traceback: str = "", *,
                 lineno: int | None = None, filename: str | None = None) -> None:
        super().__init__(safe_message(message, 2 * MAX_MESSAGE_CHARS))
        self.cause = cause
        self.type_name = safe_type_name(type_name) if type_name else ""
        self.traceback = ""
        self.lineno, self.filename = safe_location(lineno, filename)

    @classmethod
    def from_reply(cls, header: dict, module_name: str, *, echo: bool = True) -> "StudentImportError":
        """Decode the child's ``import_error`` message through the parent's filter.

        `echo=False` (a child with known-good pieces: its import-time code could have called
        them) keeps the type name only; otherwise the capped, cleaned message (e.g. "SyntaxError:
        invalid syntax (ex4_gae.py, line 12)") is kept.
        """
        type_name = safe_type_name(header.get("type"), header.get("base"))
        message = safe_message(header.get("message"))
        missing = type_name == "ModuleNotFoundError" and f"'{module_name}'" in message
        text = f"{type_name}: {message}" if echo else f"{type_name} (raised while importing the module)"
        # Where a SyntaxError is: sent as fields (never parsed out of the text), and only where the
        # message may be shown: in a child with known-good pieces a raised SyntaxError's line could
        # carry what the reference computed.
        from ppo_course.grading_kit.states import SYNTAX_ERROR_NAMES

        shown = echo and type_name in SYNTAX_ERROR_NAMES
        lineno, filename = (header.get("lineno"), header.get("filename")) if shown else (None, None)
        return cls(text, cause="missing" if missing else "error", type_name=type_name, lineno=lineno,
                   filename=filename)


class SandboxError(RuntimeError):
    """The grading machinery itself failed (fork server died, set-up refused): not the student's fault."""
