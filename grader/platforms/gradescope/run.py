"""Entry point of the Gradescope autograder: ``python -m grader.platforms.gradescope.run``.

Grades ``/autograder/submission`` exactly as one student of a batch is graded
(``grader.student.grade_alone``, the per-student step of every path: the one intake of
``grader.intake.submission``, a fresh isolated worker process, one wall-clock limit) and writes Gradescope's results.json:
the contract's schema plus ``stdout_visibility: "hidden"`` (the log may show
what student code printed), ``execution_time`` (seconds), and every hidden
test's ``visibility`` forced to the bundle's ``hidden_visibility``
(default ``after_published``) so that no student sees a hidden test before
the instructor says so; hidden tests' outputs never hold hidden inputs (the
graders' rule). Exits 0 once results.json is written; on a grader fault
(``environment.AutograderFault``) writes no results.json (Gradescope then shows a failed
run, never a 0), prints the reason and exits 1.

Two grading tiers (``BundleConfig.profile`` / ``full_after_due``): a
submission is graded with the ``fast`` profile (seconds: exercise 7's short
training run left out) while the assignment is open, and with ``full`` once
its last deadline (``late_due_date``, else ``due_date`` of Gradescope's
``/autograder/submission_metadata.json``) has passed, which is when the
instructor presses "Regrade all submissions".

Widening visibility (``reveal_after``): from a student's N-th previous
submission on (``len(previous_submissions)`` in the metadata), hidden tests
are shown (``visible``: their name, what they check and the diagnosis, never
their inputs), so that a student stuck after N tries learns *what* is wrong
instead of probing the autograder; before that they follow
``hidden_visibility``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from datetime import datetime, timezone

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from grader.environment import environment_problem
from grader.platforms.gradescope.environment import AutograderFault, state_tier
from grader.points import Visibility


class BundleConfig(BaseModel):
    """``gradescope_config.json`` at the bundle's root, written by ``ppo-course gradescope-bundle``."""

    model_config = ConfigDict(extra="forbid")

    profile: str = Field("fast", pattern="^(full|fast)$")  # the submit-time tier
    full_after_due: bool = True  # grade with "full" once the last deadline has passed (the regrade)
    reveal_after: int = Field(0, ge=0)  # show hidden tests from this many previous submissions on (0: never)
    hidden_visibility: Visibility = "after_published"
    timeout_s: float = Field(540.0, gt=0)  # under Gradescope's default 10-minute limit, with room to start
    max_bytes: int = Field(20_000_000, gt=0)
    quiz: bool = False  # also grade a quiz responses file (grader.platforms.gradescope.quiz)


class _Assignment(BaseModel):
    model_config = ConfigDict(extra="ignore")

    due_date: datetime | None = None
    late_due_date: datetime | None = None


class SubmissionMetadata(BaseModel):
    """The fields of Gradescope's ``/autograder/submission_metadata.json`` that choose the tier and visibility.

    Source: https://gradescope-autograders.readthedocs.io/en/latest/submission_metadata/
    (``created_at``, ``assignment.due_date`` / ``late_due_date``, ``previous_submissions``).
    """

    model_config = ConfigDict(extra="ignore")

    created_at: datetime | None = None
    assignment: _Assignment = Field(default_factory=_Assignment)
    previous_submissions: list[dict] = Field(default_factory=list)

    @property
    def deadline(self) -> datetime | None:
        """The last deadline: ``late_due_date`` when set, else ``due_date`` (timezone-aware), or None."""
        return self.assignment.late_due_date or self.assignment.due_date


def read_metadata(path: Path | None) -> SubmissionMetadata | None:
    """The submission metadata, or None when the file is absent or not in Gradescope's format (then: defaults)."""
    if path is None or not Path(path).is_file():
        return None
    try:
        return SubmissionMetadata.model_validate_json(Path(path).read_bytes())
    except (OSError, ValidationError):
        return None


def choose_profile(config: BundleConfig, metadata: SubmissionMetadata | None, now: datetime | None = None) -> str:
    """``"full"`` after the last deadline when ``config.full_after_due``, else ``config.profile``."""
    now = now or datetime.now(timezone.utc)
    deadline = metadata.deadline if metadata else None
    if config.full_after_due and deadline is not None:
        if deadline.tzinfo is None:
            deadline = deadline.replace(tzinfo=timezone.utc)
        if now >= deadline:
            return "full"
    return config.profile


def hidden_visibility_for(config: BundleConfig, metadata: SubmissionMetadata | None) -> str:
    """``visible`` from the ``reveal_after``-th previous submission on, else ``config.hidden_visibility``."""
    previous = len(metadata.previous_submissions) if metadata else 0
    if config.reveal_after and previous >= config.reveal_after:
        return "visible"
    return config.hidden_visibility


def _find_entry(submission: Path):
    """A batch ``Entry`` for Gradescope's submission folder (a lone uploaded .zip is opened as a zip)."""
    from ppo_course.submission_rules import Entry

    files = [p for p in submission.iterdir() if not p.name.startswith(".")] if submission.is_dir() else []
    if len(files) == 1 and files[0].is_file() and files[0].suffix.lower() == ".zip":
        return Entry("submission", [files[0]], "zip")
    problem = None if submission.is_dir() else f"the submission folder {submission} does not exist"
    return Entry("submission", [submission], "dir", problem)


def apply_visibility(results: dict, hidden_visibility: str) -> dict:
    """Set ``visibility`` of every test tagged ``hidden`` to ``hidden_visibility`` (in place; returned)."""
    for test in results.get("tests", []):
        if "hidden" in (test.get("tags") or []):
            test["visibility"] = hidden_visibility
    return results


def safe_outputs(results: dict) -> dict:
    """Cap every output (top level and per test, `ppo_course.text_safety.cap`) and have Gradescope show them as
    plain text (``output_format``/``test_output_format`` "text"), so that no student-derived text is
    rendered as Markdown or HTML. In place; returned."""
    from ppo_course.text_safety import cap

    if "output" in results:
        results["output"] = cap(results["output"])
    for test in results.get("tests", []):
        if "output" in test:
            test["output"] = cap(test["output"])
    results["output_format"] = "text"
    results["test_output_format"] = "text"
    return results


def grade_for_gradescope(submission: Path, config: BundleConfig,
                         metadata: SubmissionMetadata | None = None) -> dict:
    """Grade one Gradescope submission and return its results.json dict (see the module docstring).

    Raises:
        AutograderFault: this Python cannot import what the graders import (checked before any student code),
            or the grader itself failed on the submission (status ``grader_fault``): no score exists.
    """
    from grader.runners.workers import run_worker
    from grader.student import grade_alone
    from ppo_course.submission_rules import SubmissionLimits

    profile = choose_profile(config, metadata)
    broken = environment_problem()  # before any student code: a broken autograder never grades (environment.py)
    if broken:
        raise AutograderFault(broken)
    config = config.model_copy(update={"profile": profile})
    t0 = time.monotonic()
    limits = SubmissionLimits(timeout_s=config.timeout_s, max_bytes=config.max_bytes)
    graded = grade_alone(_find_entry(submission), limits=limits, profile=config.profile, exercises=None,
                         runner=run_worker)
    if graded.fault:
        raise AutograderFault(graded.message)
    results = safe_outputs(apply_visibility(graded.results_json(), hidden_visibility_for(config, metadata)))
    if config.quiz:
        from grader.platforms.gradescope.quiz import add_quiz_results

        add_quiz_results(results, submission)
        safe_outputs(results)
    results["stdout_visibility"] = "hidden"
    results["execution_time"] = int(round(time.monotonic() - t0))
    results["extra_data"]["tier"] = profile  # (batch_status: the outcome's status, StudentOutcome.results_json)
    return state_tier(results, profile)


def main(argv: list[str] | None = None) -> int:
    """``python -m grader.platforms.gradescope.run --submission DIR --results FILE [--config FILE]``."""
    from grader.records.gradebook import atomic_write_json

    parser = argparse.ArgumentParser(prog="python -m grader.platforms.gradescope.run")
    parser.add_argument("--submission", type=Path, default=Path("/autograder/submission"))
    parser.add_argument("--results", type=Path, default=Path("/autograder/results/results.json"))
    parser.add_argument("--config", type=Path, default=None)
    parser.add_argument("--metadata", type=Path, default=None,
                        help="submission_metadata.json (default: beside the submission folder, as on Gradescope)")
    args = parser.parse_args(argv)
    config = BundleConfig()
    if args.config is not None and args.config.is_file():
        config = BundleConfig.model_validate_json(args.config.read_text(encoding="utf-8"))
    metadata = read_metadata(args.metadata or args.submission.parent / "submission_metadata.json")
    try:
        results = grade_for_gradescope(args.submission, config, metadata=metadata)
    except AutograderFault as exc:  # a failed run (no results.json), never a 0 in Gradescope's gradebook
        args.results.unlink(missing_ok=True)
        print(f"autograder fault: the submission was NOT graded: {exc}. No results.json is written, so Gradescope "
              "shows this run as failed; fix the autograder, then use 'Regrade all submissions'.")
        return 1
    atomic_write_json(args.results, results)
    print(f"graded: score {results.get('score', 0):g}, status {results['extra_data']['batch_status']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
