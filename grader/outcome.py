"""One student's outcome: stage, grade in a worker, and turn what came back into a status and results.

TA side. :func:`grade_entry` never raises for a bad submission: it answers
``rejected`` (intake said no, or the grader could not read it), ``empty``,
``timed-out``, ``crashed`` or ``graded``, with the results.json to publish and
feedback that leads with the status. Used by the batch and the Gradescope runner.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from grader.intake import BatchLimits, Entry, Rejected, stage_submission
from grader.workers import WorkerOutcome, _Workers, run_worker
from ppo_course.text_safety import md_inline

@dataclass
class GradedEntry:
    """One student's outcome: status, the message for the gradebook, results.json, feedback.md."""

    status: str
    message: str
    results: dict
    feedback: str
    notes: list[str]
    seconds: float


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
        if outcome.results is None:
            results = _zero_results(zero_template(profile, exercises), message)
        else:
            results = outcome.results
            if staged.n_python_files == 0:
                status, message = "empty", "the submission holds no Python file"
            elif (results.get("extra_data") or {}).get("status") == "rejected":
                # grade_submission could not read it (GradeResult.status); its output says why.
                status = "rejected"
                message = str(results.get("output", "")) or "the grader could not read the submission"
            elif n_errors := _grader_errors(results):
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
    reasons = exercise_reasons(results) if status == "graded" else []
    full_message = "; ".join(filter(None, [message, *notes, *reasons]))
    return GradedEntry(
        status, full_message, results, _feedback_with_notes(entry.student_id, status, message, notes, feedback), notes, seconds
    )


def _short_import_error(stem: str, output: str) -> str:
    """ "SyntaxError line 12" (or "SyntaxError in ex4_gae.py line 12", "ImportError") from the last
    line of a module_broken test's output, e.g. "SyntaxError: expected ':' (ex4_gae.py, line 12)"."""
    last = (output.strip().splitlines() or [""])[-1]
    kind = re.match(r"\s*([A-Za-z_][\w.]*)\s*:", last)
    name = kind.group(1).rsplit(".", 1)[-1] if kind and kind.group(1) != "Diagnosis" else "does not import"
    where = re.search(r"\(([^(),]+\.py), line (\d+)\)\s*$", last)
    if not where:
        return name
    place = f"line {where.group(2)}" if where.group(1) == f"{stem}.py" else f"in {where.group(1)} line {where.group(2)}"
    return f"{name} {place}"


def exercise_reasons(results: dict) -> list[str]:
    """One short reason per exercise that was not really graded, for the gradebook's message column.

    From a results.json dict: "ex7_ppo_step: missing" (module absent), "ex4_gae: SyntaxError line 12"
    (import failed; the error's last line as the public tests report it), "ex5_rollout_buffer: not
    implemented" (every failed test says not_implemented and none passed). Graded exercises give nothing.
    """
    status = (results.get("extra_data") or {}).get("exercise_status") or {}
    tests = results.get("tests") or []
    reasons = []
    for stem, st in status.items():
        mine = [t for t in tests if (t.get("tags") or [None])[0] == stem]
        if st == "missing":
            reasons.append(f"{stem}: missing")
        elif st == "broken":
            broken = [t for t in mine if "diagnosis:module_broken" in (t.get("tags") or [])]
            shown = next((t for t in broken if t.get("visibility") != "hidden" and "public" in t.get("tags", [])),
                         broken[0] if broken else None)
            reasons.append(f"{stem}: " + (_short_import_error(stem, shown.get("output", "")) if shown
                                          else "does not import"))
        elif mine and all(t.get("status") != "passed" and "diagnosis:not_implemented" in (t.get("tags") or [])
                          for t in mine):
            reasons.append(f"{stem}: not implemented")
    return reasons


def _grader_errors(results: dict) -> int:
    """Number of tests whose failure the grader blames on itself (tag ``diagnosis:grader_error``)."""
    return sum("diagnosis:grader_error" in (t.get("tags") or []) for t in results.get("tests", []))


def zero_template(profile: str, exercises: list[str] | None) -> dict:
    """The results.json of a submission that could not be graded, built from ``grader/points.yaml`` (nothing runs).

    Every selected exercise's tests with their max scores, as an empty
    submission's results would list them; :func:`_zero_results` scores them 0
    with the reason. Deterministic, so it needs no cache.
    """
    from grader.grade import GradeResult, _rejected
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
