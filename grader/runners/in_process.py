"""The in-process runner: one staged submission graded in this process (``ppo-course grade``, nbgrader's autograde).

TA side, trusted. A ``grader.runners.runner.Runner`` like the others, for the paths that grade one
student and exit: starting a worker process would only add an interpreter and ``import torch``. The
student's code still runs only in the sandbox's children (``grader.grade.grade_submission`` forks them);
what this process cannot do is kill a grading that hangs in the grader itself, so the request's one
wall-clock limit is the sandboxed calls' (``SubmissionLimits.timeout_s``), as in every worker.
"""

from __future__ import annotations

import time
from pathlib import Path

from grader.intake.request import GradeRequest
from grader.runners.runner import WorkerOutcome, Workers


class InProcessRunner:
    """Grade a ``GradeRequest`` with ``grader.grade.grade_submission`` in this process.

    Args:
        limits: ``grader.sandbox.Limits`` for the children (None: the sandbox's defaults).

    Calling it returns a ``WorkerOutcome``: ``graded`` with the typed result, or ``crashed`` when the grading
    raised (a grader fault: the exception's type and message are the reason; the per-student step publishes
    no score). ``scratch`` and ``workers`` are unused (no process is started).
    """

    def __init__(self, limits=None) -> None:
        self.limits = limits

    def __call__(self, request: GradeRequest, scratch: Path, *, workers: Workers | None = None) -> WorkerOutcome:
        """Grade ``request`` here (see the class docstring); raises nothing but ``KeyboardInterrupt``."""
        from grader.grade import grade_submission

        t0 = time.monotonic()
        try:
            result = grade_submission(request, limits=self.limits)
        except Exception as exc:  # noqa: BLE001 - whatever the grader raises is the grader's fault, never a score
            return WorkerOutcome(status="crashed", message=f"the grading raised {type(exc).__name__}: {exc}",
                                 seconds=time.monotonic() - t0)
        return WorkerOutcome(status="graded", result=result, seconds=time.monotonic() - t0)
