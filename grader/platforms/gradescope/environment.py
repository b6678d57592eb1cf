"""Is the autograder's own Python able to grade? And what the fast tier leaves to the regrade.

A ``run_autograder`` whose Python lacks torch used to grade anyway: every
module failed to import in the child and the student was published ``0``
with every test tagged ``module_missing``, as if they had handed in nothing
(issue 21, item 3). :func:`environment_problem` imports, in the trusted
parent and before any student code is staged, every package the grading
child needs; when one fails, :func:`broken_environment_results` is published
instead of a grade: no tests, a message that says the autograder is broken
and that the 0 is not the student's score, and ``extra_data.batch_status``
``grader_error`` (with ``extra_data.environment_error``) for the staff.

The fast tier (``BundleConfig.profile = "fast"``) leaves exercise 7's
training-run test to the full regrade after the deadline, so its
``max_score`` is the assignment's less that test's points (76 of 80 with the
shipped points.yaml). :func:`state_tier` says so in the results (top-level
``output`` and ``extra_data.assignment_max_score`` /
``extra_data.deferred_points``) instead of leaving a different maximum
unexplained.
"""

from __future__ import annotations

import importlib

#: What the grading child imports (the student's modules need torch; the graders numpy, pytest, the reference).
REQUIRED_MODULES = ("torch", "numpy", "pytest", "pydantic", "yaml", "ppo_course", "ppo_reference", "grader.hidden")


def environment_problem(modules: tuple[str, ...] = REQUIRED_MODULES) -> str | None:
    """The first required module this Python cannot import, or the course's grader secret it cannot use, as a
    sentence for the staff, or None.

    Imports each of ``modules`` in this (trusted) process: an ``ImportError`` or an ``OSError`` (a
    shared library missing) is a broken environment; so is a missing or unusable grader secret
    (``grader.course_secret.secret_problem``: the bundle or the course carries none), which is never
    replaced by another.
    """
    for name in modules:
        try:
            importlib.import_module(name)
        except (ImportError, OSError) as exc:
            return f"the autograder's Python cannot import {name} ({type(exc).__name__}: {exc})"
    from grader.course_secret import secret_problem

    return secret_problem()


def broken_environment_results(problem: str) -> dict:
    """Gradescope's results.json for an autograder that cannot grade: no tests, not a grade, clearly said.

    ``score`` is 0.0 because Gradescope's schema needs one when there are no tests; the
    ``output`` says it is not the student's score and the staff's field says why.
    """
    from grader.points import load_points

    points = load_points()
    return {
        "score": 0.0,
        "output": ("The autograder could not run: its environment is broken, so your code was NOT graded and "
                   "this 0 is not your score. The course staff has been told; your submission will be regraded "
                   "once the autograder is fixed. You do not need to resubmit."),
        "output_format": "text",
        "tests": [],
        "stdout_visibility": "hidden",
        "extra_data": {"max_score": points.max_score, "exercises": {}, "grader_version": points.grader_version,
                       "batch_status": "grader_error", "environment_error": problem},
    }


def state_tier(results: dict, profile: str) -> dict:
    """Say, in ``results`` (in place; returned), how the tier's maximum relates to the assignment's."""
    from grader.points import load_points

    full = load_points().max_score
    tier_max = float(results.get("extra_data", {}).get("max_score", full))
    deferred = round(full - tier_max, 6)
    results.setdefault("extra_data", {})["assignment_max_score"] = full
    results["extra_data"]["deferred_points"] = deferred
    if profile == "fast" and deferred > 0:
        line = (f"Fast tier (before the deadline): this result is out of {tier_max:g} points; the other "
                f"{deferred:g} of the assignment's {full:g} (exercise 7's training run) are graded when the "
                "course staff regrades after the deadline.")
        results["output"] = f"{line}\n\n{results['output']}" if results.get("output") else line
    return results
