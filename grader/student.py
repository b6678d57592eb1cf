"""One student's grading, the per-student step: stage, grade with a runner, classify into a ``StudentOutcome``.

TA side. :func:`grade_entry` is the one step of every path that grades a student: ``grade-batch`` (a warm
or fresh worker, or a Dask node), ``ppo-course grade`` and nbgrader's autograde (in this process,
``grader.runners.in_process``) and the Gradescope runner (a fresh worker). It never raises for a bad
submission: it answers ``rejected`` (intake said no, or the grader could not read it), ``empty``,
``timed-out``, ``grader_fault`` or ``graded``, always with a typed ``GradeResult`` (a submission that could
not be graded gets :func:`zero_result`: every test of ``grader/points.yaml`` scored 0 with the reason).
The time-out rule (a grading cut short by the submission's clock publishes no partial score) and the fault
rule (a test diagnosed ``grader_error``, or a worker lost, publishes no score) live here and nowhere else.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from grader.grade import unreadable_result
from grader.intake.submission import private_folder
from ppo_course.submission_rules import Entry, Rejected, SubmissionLimits, stage_submission
from grader.points import load_points
from grader.records.gradebook import Status
from grader.records.outcome import StudentOutcome
from grader.records.results import GradeResult
from grader.intake.request import GradeRequest
from grader.runners.runner import Runner, WorkerOutcome, Workers, time_out_message
from grader.runners.workers import run_worker
from ppo_course.syllabus import EXERCISES
from ppo_course.text_safety import cap


def grade_entry(
    entry: Entry,
    staging: Path,
    scratch: Path,
    *,
    limits: SubmissionLimits,
    profile: str,
    exercises: list[str] | None,
    workers: Workers | None = None,
    runner: Runner | None = None,
    fingerprint: str | None = None,
) -> StudentOutcome:
    """Check, stage and grade one submission with a runner; never raises for a bad submission.

    Status: ``rejected`` (failed a check, or ``grade_submission`` could not read it),
    ``empty`` (no Python file), ``timed-out``, ``grader_fault`` (the worker died, or the grader
    reported ``grader_error`` on some test: no score is published) or ``graded``. The submission is staged once, here, into
    ``staging`` (made 0700, as its parent: ``grader.intake.submission.private_folder``); the worker grades
    that copy as it is (``GradeRequest.staged``). The staging and scratch folders
    are removed afterwards. The staged folder becomes one ``GradeRequest`` (with ``fingerprint``, the
    grader version that must grade it), which ``runner`` (a ``grader.runners.runner.Runner``) carries:
    ``grader.runners.workers.run_worker`` by default, ``grader.runners.warm.WarmPool``,
    ``grader.runners.cluster.ClusterRunner`` or ``grader.runners.in_process.InProcessRunner``.
    """
    sid = entry.student_id
    try:
        # Made just before dispatch, 0700 (and staging/ too): the one staged copy, which the worker grades as it is.
        staged = stage_submission(entry, private_folder(staging), limits)
    except Rejected as exc:
        shutil.rmtree(staging, ignore_errors=True)
        return zero_outcome(sid, "rejected", str(exc), profile, exercises)
    try:
        request = GradeRequest(submission=staged.root, staged=True, student_id=sid, profile=profile, exercises=exercises or None,
                               timeout_s=limits.timeout_s, limits=limits, fingerprint=fingerprint)
        outcome = (runner or run_worker)(request, scratch, workers=workers)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(scratch, ignore_errors=True)
    return _classify(sid, outcome, staged.n_python_files, staged.notes, limits, profile, exercises)


def grade_alone(entry: Entry, *, limits: SubmissionLimits, profile: str, exercises: list[str] | None,
                runner: Runner) -> StudentOutcome:
    """:func:`grade_entry` for one student outside a batch, its staging and scratch in a private temporary folder.

    The step of ``ppo-course grade`` and nbgrader's autograde (``grader.runners.in_process.InProcessRunner``) and
    of the Gradescope runner (a fresh worker, ``grader.runners.workers.run_worker``). The folder is removed
    afterwards; never raises for a bad submission (see :func:`grade_entry`).
    """
    work = Path(tempfile.mkdtemp(prefix="ppo-course-grade-"))
    try:
        return grade_entry(entry, work / "staging", work / "scratch", limits=limits, profile=profile,
                           exercises=exercises, runner=runner)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _classify(sid: str, outcome: WorkerOutcome, n_python_files: int, notes: list[str], limits: SubmissionLimits,
              profile: str, exercises: list[str] | None) -> StudentOutcome:
    """The :class:`StudentOutcome` of what a worker returned (see :func:`grade_entry`)."""
    result = outcome.result
    if result is None:  # timed out, or the worker died (the grader's process: a grader fault)
        status = "timed-out" if outcome.status == "timed-out" else "grader_fault"
        return zero_outcome(sid, status, outcome.message, profile, exercises, notes, outcome.seconds)
    status, message = "graded", ""
    if n_python_files == 0:
        status, message = "empty", "the submission holds no Python file"
    elif result.status == "rejected":  # grade_submission could not read it; its message says why
        status, message = "rejected", cap(result.message) or "the grader could not read the submission"
    elif result.out_of_time:
        # Some calls were cut short by the submission's clock: which ones depends on the machine's load,
        # so no partial score is published (deterministic: 0 with the reason, as a killed worker).
        return zero_outcome(sid, "timed-out", time_out_message(limits.timeout_s), profile, exercises, notes,
                            outcome.seconds)
    elif n_errors := grader_errors(result):  # not the student's fault: any score here would be silently wrong
        return StudentOutcome(student_id=sid, status="grader_fault", message=grader_fault_message(result, n_errors),
                              notes=notes, seconds=outcome.seconds, result=result, graded=False)
    return StudentOutcome(student_id=sid, status=status, message=message, notes=notes, seconds=outcome.seconds,
                          result=result)


def zero_outcome(sid: str, status: Status, message: str, profile: str, exercises: list[str] | None,
                 notes: list[str] | None = None, seconds: float = 0.0) -> StudentOutcome:
    """The outcome of a submission that could not be graded: :func:`zero_result` with the reason."""
    return StudentOutcome(student_id=sid, status=status, message=message, notes=list(notes or []), seconds=seconds,
                          result=zero_result(profile, exercises, message), graded=False)


#: The gradebook's message for a roster student with no submission folder (status ``no-submission``).
NO_SUBMISSION = "no submission: on the roster, but the submissions folder holds no folder or zip for this student"


def no_submission_outcome(sid: str, profile: str, exercises: list[str] | None) -> StudentOutcome:
    """A roster student with no submission: status ``no-submission``, every test 0 with :data:`NO_SUBMISSION`."""
    return zero_outcome(sid, "no-submission", NO_SUBMISSION, profile, exercises)




def grader_fault_message(result: GradeResult, n_errors: int | None = None) -> str:
    """The staff's reason for a grader fault found in a result: how many tests, and the first test's detail line."""
    n = grader_errors(result) if n_errors is None else n_errors
    first = next((t for t in result.tests if t.diagnosis == "grader_error"), None)
    where = ""
    if first is not None:
        lines = [line for line in (first.detail or first.output).splitlines() if line.strip()]
        where = f" (first: {first.exercise} {first.kind} {first.test}: {cap(lines[-1], 300) if lines else 'no detail'})"
    return (f"the grader itself failed on {n} test(s) (diagnosis grader_error){where}; no score is published: "
            "fix the grader, then grade again")


def grader_errors(result: GradeResult) -> int:
    """Number of tests whose failure the grader blames on itself (diagnosis ``grader_error``)."""
    return sum(t.diagnosis == "grader_error" for t in result.tests)


def zero_result(profile: str, exercises: list[str] | None, reason: str) -> GradeResult:
    """A typed result scoring 0 everywhere, built from ``grader/points.yaml`` (nothing runs).

    Every selected exercise's tests with their max scores (as an empty submission's results would
    list them), each scored 0 with ``reason`` as its output. Deterministic.
    """
    selected = [s for s in EXERCISES if exercises is None or s in exercises]
    empty = unreadable_result(Path("empty"), selected, load_points(), profile, "nothing to grade")
    return empty.model_copy(update={"message": reason,
                                    "tests": [t.model_copy(update={"output": reason}) for t in empty.tests]})
