"""Entry point of the Gradescope autograder: ``python -m grader.gradescope.run``.

Grades ``/autograder/submission`` exactly as one student of a batch is graded
(``grader.batch.grade_entry``: the same size/zip/symlink checks, a fresh
worker process with a hard time-out) and writes Gradescope's results.json:
the contract's schema plus ``stdout_visibility: "hidden"`` (the log may show
what student code printed), ``execution_time`` (seconds), and every hidden
test's ``visibility`` forced to the bundle's ``hidden_visibility``
(default ``after_published``) so that no student sees a hidden test before
the instructor says so; hidden tests' outputs never hold hidden inputs (the
graders' rule). Always exits 0 once results.json is written.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from grader.points import Visibility


class BundleConfig(BaseModel):
    """``gradescope_config.json`` at the bundle's root, written by ``ppo-course gradescope-bundle``."""

    model_config = ConfigDict(extra="forbid")

    profile: str = Field("full", pattern="^(full|fast)$")
    hidden_visibility: Visibility = "after_published"
    timeout_s: float = Field(1200.0, gt=0)
    max_bytes: int = Field(20_000_000, gt=0)


def _find_entry(submission: Path):
    """A batch ``Entry`` for Gradescope's submission folder (a lone uploaded .zip is opened as a zip)."""
    from grader.batch import Entry

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
    rendered as Markdown or HTML (issue 10, class 7). In place; returned."""
    from ppo_course.text_safety import cap

    if "output" in results:
        results["output"] = cap(results["output"])
    for test in results.get("tests", []):
        if "output" in test:
            test["output"] = cap(test["output"])
    results["output_format"] = "text"
    results["test_output_format"] = "text"
    return results


def grade_for_gradescope(submission: Path, config: BundleConfig, grade_fn: str | None = None) -> dict:
    """Grade one Gradescope submission and return its results.json dict (see the module docstring)."""
    from grader.batch import BatchLimits, ZeroTemplate, grade_entry

    t0 = time.monotonic()
    limits = BatchLimits(timeout_s=config.timeout_s, max_bytes=config.max_bytes)
    work = Path(tempfile.mkdtemp(prefix="ppo-course-gradescope-"))
    try:
        zero = ZeroTemplate(work / "empty.json", profile=config.profile, exercises=None,
                            timeout_s=config.timeout_s, grade_fn=grade_fn)
        graded = grade_entry(_find_entry(submission), work / "staging", work / "scratch", limits=limits,
                             profile=config.profile, exercises=None, zero_template=zero, grade_fn=grade_fn)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    results = safe_outputs(apply_visibility(graded.results, config.hidden_visibility))
    results["stdout_visibility"] = "hidden"
    results["execution_time"] = int(round(time.monotonic() - t0))
    results.setdefault("extra_data", {})["batch_status"] = graded.status
    return results


def main(argv: list[str] | None = None) -> int:
    """``python -m grader.gradescope.run --submission DIR --results FILE [--config FILE]``."""
    from grader.batch import atomic_write_json

    parser = argparse.ArgumentParser(prog="python -m grader.gradescope.run")
    parser.add_argument("--submission", type=Path, default=Path("/autograder/submission"))
    parser.add_argument("--results", type=Path, default=Path("/autograder/results/results.json"))
    parser.add_argument("--config", type=Path, default=None)
    parser.add_argument("--grade-fn", default=None, help=argparse.SUPPRESS)  # tests only
    args = parser.parse_args(argv)
    config = BundleConfig()
    if args.config is not None and args.config.is_file():
        config = BundleConfig.model_validate_json(args.config.read_text(encoding="utf-8"))
    results = grade_for_gradescope(args.submission, config, grade_fn=args.grade_fn)
    atomic_write_json(args.results, results)
    print(f"graded: score {results.get('score', 0):g}, status {results['extra_data']['batch_status']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
