"""The submission's one absolute wall-clock limit over all its sandboxed calls.

``grade_submission`` opens ``submission_deadline(SubmissionLimits.timeout_s)``
around a submission's grading; inside it every import and call of a
``ChildProcess`` (``grader.sandbox.process``) waits at most until that
deadline, whatever its own time-out, and once it has passed no new child is
started. ``submission_ran_out`` tells the grader afterwards whether some call
was cut short or refused (the grade is then incomplete). The state lives in
context variables, so two gradings in two threads of one process keep their own.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from typing import Iterator


#: The submission's absolute wall-clock deadline (``time.monotonic()``) and its length in seconds, or
#: None: see ``submission_deadline``. A context variable, so that two gradings in two threads of one
#: process keep their own.
_SUBMISSION: contextvars.ContextVar[tuple[float, float] | None] = contextvars.ContextVar("submission_deadline",
                                                                                     default=None)
#: Set (one shared list per ``submission_deadline`` block) when a call was cut short or refused by it.
_RAN_OUT: contextvars.ContextVar[list[bool] | None] = contextvars.ContextVar("submission_ran_out", default=None)


@contextlib.contextmanager
def submission_deadline(seconds: float) -> Iterator[float]:
    """Cap every sandboxed call made inside the block by one absolute deadline, ``seconds`` from now.

    Calls and imports get ``min(their own time-out, what is left)``; once it has
    passed, each fails at once with ``StudentTimeout`` ("used up its N s") and no
    new child is started. Nested blocks keep the earlier deadline. Yields the
    deadline (``time.monotonic()`` seconds).
    """
    current = _SUBMISSION.get()
    deadline = time.monotonic() + float(seconds)
    if current is None or deadline < current[0]:
        current = (deadline, float(seconds))
    token = _SUBMISSION.set(current)
    ran_out = _RAN_OUT.get()
    ran_out_token = _RAN_OUT.set(ran_out if ran_out is not None else [False])
    try:
        yield current[0]
    finally:
        _RAN_OUT.reset(ran_out_token)
        _SUBMISSION.reset(token)


def submission_ran_out() -> bool:
    """True when, inside the current ``submission_deadline`` block, some sandboxed call or import was cut
    short or refused because the submission's grading time was used up (its grade is then incomplete)."""
    ran_out = _RAN_OUT.get()
    return bool(ran_out and ran_out[0])


def past_deadline() -> bool:
    """True once the current ``submission_deadline`` block's deadline has passed (False outside any block)."""
    current = _SUBMISSION.get()
    return current is not None and time.monotonic() >= current[0]


def cap_deadline(deadline: float) -> tuple[float, bool]:
    """``(deadline, capped)``: the earlier of ``deadline`` and the submission's; capped when the latter."""
    current = _SUBMISSION.get()
    if current is not None and current[0] < deadline:
        return current[0], True
    return deadline, False


def out_of_time() -> str:
    """Record that the current submission ran out of time (``submission_ran_out`` turns True); returns the words
    its ``StudentTimeout`` or ``StudentImportError`` carries."""
    ran_out = _RAN_OUT.get()
    if ran_out is not None:
        ran_out[0] = True
    current = _SUBMISSION.get()
    seconds = current[1] if current is not None else 0.0
    return (f"the submission used up its {seconds:g} s of grading time "
            "(its calls, and the grader's work on its behalf, count together)")
