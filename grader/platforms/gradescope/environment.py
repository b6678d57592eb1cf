"""A failed autograder run, as Gradescope shows one, and what the fast tier leaves to the regrade.

A grader fault (this Python cannot import what the graders import, ``grader.environment``; or a grading
with a test diagnosed ``grader_error``, a worker lost) is never published as a score: Gradescope's
autograder specification says that a run that leaves no valid ``/autograder/results/results.json``
is shown as "The autograder failed to execute correctly" (a failed run, not a graded 0; its
troubleshooting page), so :class:`AutograderFault` makes ``run.main`` remove any results.json, print
the reason to the run's stdout (shown to the instructor) and exit 1. Nothing notifies the staff: the
student sees Gradescope's own failure message, which tells them to contact the course staff.

The fast tier (``BundleConfig.profile = "fast"``) leaves exercise 7's
training-run test to the full regrade after the deadline, so its
``max_score`` is the assignment's less that test's points (76 of 80 with the
shipped points.yaml). :func:`state_tier` says so in the results (top-level
``output`` and ``extra_data.assignment_max_score`` /
``extra_data.deferred_points``) instead of leaving a different maximum
unexplained.
"""

from __future__ import annotations


class AutograderFault(RuntimeError):
    """The grader itself failed on this submission: Gradescope must show a failed run, never a score."""


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
