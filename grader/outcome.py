"""One student's outcome: stage, grade in a worker, and turn what came back into a status and results.

TA side. :func:`grade_entry` never raises for a bad submission: it answers
``rejected`` (intake said no, or the grader could not read it), ``empty``,
``timed-out``, ``crashed`` or ``graded``, with the results.json to publish and
feedback that leads with the status. Used by the batch and the Gradescope runner.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from grader.intake import BatchLimits, Entry, Rejected, stage_submission
from grader.results import GradeResult
from grader.workers import WorkerOutcome, _Workers, run_worker
from ppo_course.text_safety import md_inline

@dataclass
class GradedEntry:
    """One student's outcome.

    Attributes:
        status: graded / timed-out / crashed / empty / rejected.
        message: the gradebook's message column (the status's reason, the intake's notes, then one
            short reason per exercise not really graded: :func:`exercise_reasons`).
        results: the results.json dictionary to publish (contract format; the status leads its ``output``).
        feedback: feedback.md to publish.
        notes: the intake's notes (files it skipped, ...).
        seconds: wall-clock seconds of the grading.
        result: the typed ``GradeResult`` the worker returned (None when nothing was graded: rejected
            by the intake, timed out, crashed); what the batch, the report and regrades read.
    """

    status: str
    message: str
    results: dict
    feedback: str
    notes: list[str]
    seconds: float
    result: GradeResult | None = None


def grade_entry(
    entry: Entry,
    staging: Path,
    scratch: Path,
    *,
    limits: BatchLimits,
    profile: str,
    exercises: list[str] | None,
    grade_fn: str | None = None,
    workers: _Workers | None = None,
    runner: Callable[..., WorkerOutcome] | None = None,
) -> GradedEntry:
    """Check, stage and grade one submission in a worker process; never raises for a bad submission.

    A submission that could not be graded gets :func:`zero_template`'s results (every
    test, scored 0 with the reason). Status:
    ``rejected`` (failed a check, or ``grade_submission`` could not read it),
    ``empty`` (no Python file), ``timed-out``, ``crashed`` (the worker died, or the grader
    reported ``grader_error`` on some test) or ``graded``. The
    staging and scratch folders are removed afterwards. ``runner`` replaces
    :func:`run_worker` (same signature; ``grader.cluster.ClusterRunner``).
    """
    notes: list[str] = []
    result: GradeResult | None = None
    try:
        staged = stage_submission(entry, staging, limits)
        notes = staged.notes
    except Rejected as exc:
        message = str(exc)
        results = _zero_results(zero_template(profile, exercises), f"Submission rejected: {message}")
        status, seconds, feedback = "rejected", 0.0, ""
    else:
        outcome = (runner or run_worker)(
            staged.root,
            scratch,
            profile=profile,
            exercises=exercises,
            timeout_s=limits.timeout_s,
            grade_fn=grade_fn,
            workers=workers,
            submission_limits=None if grade_fn else limits,
        )
        status, message, seconds, feedback = outcome.status, outcome.message, outcome.seconds, outcome.feedback
        result = outcome.result
        if result is None:
            results = _zero_results(zero_template(profile, exercises), message)
        else:
            results = result.to_results_json()
            if staged.n_python_files == 0:
                status, message = "empty", "the submission holds no Python file"
            elif result.status == "rejected":
                # grade_submission could not read it; its message says why (as results.json's output).
                status = "rejected"
                message = results["output"] or "the grader could not read the submission"
            elif result.out_of_time:
                # Some calls were cut short by the submission's clock: which ones depends on the machine's
                # load, so no partial score is published (deterministic: 0 with the reason, as a killed worker).
                status = "timed-out"
                message = (f"grading took longer than the limit of {limits.timeout_s:g} s and was stopped "
                           "(look for an infinite loop or very slow code)")
                results, feedback, result = _zero_results(zero_template(profile, exercises), message), "", None
            elif n_errors := grader_errors(result):
                # Not the student's fault: a low score here would be silently wrong.
                status = "crashed"
                message = (f"the grader itself failed on {n_errors} test(s) (diagnosis grader_error); "
                           "fix the grader, then rerun the batch")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(scratch, ignore_errors=True)
    if notes or status != "graded":
        head = f"Status: {status}. {message}".strip()
        for note in notes:
            head += f"\n- {note}"
        results["output"] = (head + ("\n\n" + results["output"] if results.get("output") else "")).strip()
    reasons = exercise_reasons(result) if status == "graded" and result is not None else []
    full_message = "; ".join(filter(None, [message, *notes, *reasons]))
    return GradedEntry(
        status, full_message, results, _feedback_with_notes(entry.student_id, status, message, notes, feedback), notes,
        seconds, result)


def exercise_reasons(result: GradeResult) -> list[str]:
    """One short reason per exercise that was not really graded, for the gradebook's message column.

    From the typed result's exercise states (``ExerciseResult.reason``), in the result's order:
    "ex7_ppo_step: missing", "ex4_gae: SyntaxError line 12", "ex6_kl_reward: SyntaxError in ex4_gae.py
    line 12" (the error is in a file the module imports), "ex3_full_loss: ImportError", "ex2_clipped_loss:
    does not import" (time-out or crash at import), "ex5_rollout_buffer: not implemented" (every test
    failed with not_implemented). Graded exercises give nothing. Nothing is parsed from text.
    """
    return [f"{stem}: {why}" for stem, e in result.exercises.items() if (why := e.reason(stem))]


def grader_errors(result: GradeResult) -> int:
    """Number of tests whose failure the grader blames on itself (diagnosis ``grader_error``)."""
    return sum(t.diagnosis == "grader_error" for t in result.tests)


def zero_template(profile: str, exercises: list[str] | None) -> dict:
    """The results.json of a submission that could not be graded, built from ``grader/points.yaml`` (nothing runs).

    Every selected exercise's tests with their max scores, as an empty
    submission's results would list them; :func:`_zero_results` scores them 0
    with the reason. Deterministic, so it needs no cache.
    """
    from grader.grade import _rejected
    from grader.points import EXERCISES, load_points

    selected = [s for s in EXERCISES if exercises is None or s in exercises]
    result: GradeResult = _rejected(Path("empty"), selected, load_points(), profile, "nothing to grade")
    return result.to_results_json()


def _zero_results(template: dict | None, reason: str) -> dict:
    """A results.json scoring 0 everywhere, shaped like ``template`` (an empty submission's results)."""
    exercises = {}
    max_score = 0.0
    tests: list[dict] = []
    version = None
    if template:
        extra = template.get("extra_data", {})
        exercises = {k: {"score": 0.0, "max_score": float(v.get("max_score", 0.0))} for k, v in extra.get("exercises", {}).items()}
        max_score = float(extra.get("max_score", sum(v["max_score"] for v in exercises.values())))
        version = extra.get("grader_version")
        for t in template.get("tests", []):
            tests.append({**t, "score": 0.0, "status": "failed", "output": reason})
    return {
        "score": 0.0,
        "output": "",  # grade_entry puts the status and the reason here
        "tests": tests,
        "extra_data": {"max_score": max_score, "exercises": exercises, "grader_version": version},
    }


def _feedback_with_notes(student_id: str, status: str, message: str, notes: list[str], feedback: str) -> str:
    head = []
    if status != "graded" or notes:
        # The id (a folder or zip name), the message and notes quote student-derived text: escaped, capped.
        head.append(f"# Batch grading: {md_inline(student_id)}\n")
        head.append(f"**Status: {status}.** {md_inline(message, 2000)}\n" if message else f"**Status: {status}.**\n")
        for note in notes:
            head.append(f"- {md_inline(note, 2000)}")
        head.append("")
    return "\n".join(head) + ("\n" + feedback if feedback else "")
