"""Grader faults: a student whose grading the grader itself spoiled has no score, in any published file.

TA side. A grading with a test diagnosed ``grader_error`` (a module the hidden tests import missing, the
reference raising, a sandbox that would not start), a worker lost or a fault of the batch layer is recorded
with status ``grader_fault`` (``grader.records.outcome``); older records say ``crashed``. Every published file
reads a record's scores through :func:`published_score` (None: an empty cell, never 0), and every command
that publishes a batch (``export``, ``lti post-grades``) calls :func:`refuse_grader_faults` first. The
records are ``grader.records.gradebook.StudentRecord`` (read duck-typed here: this module imports none of them).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

#: The statuses of a student whose grading the grader itself spoiled: no score is published for them.
FAULT_STATUSES: frozenset[str] = frozenset({"grader_fault", "crashed"})


def is_fault(status: str) -> bool:
    """True for a status whose student has no score because the grader itself failed (:data:`FAULT_STATUSES`)."""
    return status in FAULT_STATUSES


def published_score(record, stem: str | None = None) -> float | None:
    """The score a record publishes: the total (``stem`` None) or one exercise's; None for a grader fault.

    The one reader of a record's scores for every published file (gradebook.csv, nbgrader's CSV, the LMS
    exports, the LTI passback): a faulted student's cell is empty, never 0.
    """
    if is_fault(record.status):
        return None
    if stem is None:
        return float(record.score or 0.0)
    value = record.exercise_scores.get(stem, {}).get("score")
    return float(value or 0.0)


def fault_ids(records: Iterable) -> list[str]:
    """The students whose record is a grader fault (:func:`is_fault`), sorted."""
    return sorted(r.student_id for r in records if is_fault(r.status))


class GraderFaultRefused(ValueError):
    """A batch holding grader faults is not published as it is: the faulted students have no score yet."""


#: The option of ``export`` and ``lti post-grades`` that publishes a batch with grader faults (their cells empty).
ALLOW_FAULTS_FLAG = "--allow-grader-faults"


def refuse_grader_faults(records: Iterable, batch_dir: Path | str, *, allowed: bool = False,
                         flag: str = ALLOW_FAULTS_FLAG) -> list[str]:
    """Raise :class:`GraderFaultRefused` when any record is a grader fault, unless ``allowed``.

    The one check of every command that publishes a batch (``export`` in every format, ``lti post-grades``).

    Args:
        records: the batch's records.
        batch_dir: the batch folder (named in the message).
        allowed: the TA passed ``flag``: publish the others, the faulted students' cells left empty (never 0).
        flag: the command's option, named in the message.

    Returns:
        The faulted students (sorted; [] when none), when publishing goes on.

    Raises:
        GraderFaultRefused: naming the faulted students and how to regrade them (nothing is published).
    """
    faulted = fault_ids(records)
    if not faulted or allowed:
        return faulted
    shown = ", ".join(faulted[:10]) + (f" and {len(faulted) - 10} more" if len(faulted) > 10 else "")
    raise GraderFaultRefused(
        f"{batch_dir} holds {len(faulted)} student(s) whose grading failed in the grader itself (status "
        f"grader_fault: {shown}); they have no score yet, and publishing a 0 for them would be wrong. Fix the "
        "grader (the gradebook's message column says what failed), rerun the same grade-batch command (it "
        f"regrades them), then publish again; or pass {flag} to publish the others with the faulted students' "
        "cells left empty.")
