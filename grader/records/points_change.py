"""A change of an exercise's maximum against a batch's published record: named, refused without a flag, told to exports.

TA side, outside the fingerprint. An LMS grade item is made for one maximum; a points change that moves an
exercise's maximum (``grader/points.yaml``: ``ExercisePoints.max_score``) makes every grade published before it
and every item made for it disagree with the new grades. So:

* ``OUT_DIR/.batch/maxima.json`` holds each exercise's maximum as the batch publishes it (points.yaml's,
  ``{stem: points}``), written when a ``grade-batch`` run starts grading. A batch published before that file
  existed has its maxima read from its records (``<student>/batch.json`` of full-profile graded students).
* :func:`check_points_change` compares the points file's maxima with them before anything is graded: a change
  raises :class:`PointsChanged` naming each exercise ("ex1_ratio: maximum 10 → 11 since the published batch")
  unless the TA passes :data:`ACCEPT_FLAG`; an accepted change is kept in ``OUT_DIR/.batch/points_changes.json``
  (``{stem: {"published": old, "now": new}}``, the oldest published maximum kept across several changes).
* :func:`export_warnings` gives ``export`` one warning per exported item whose maximum differs from the one
  published before the accepted change.

A fresh batch (no record, no file) has nothing to compare: its maxima are simply written.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ppo_course.atomic_files import atomic_write_text

MAXIMA = "maxima.json"  # under OUT_DIR/.batch
CHANGES = "points_changes.json"  # under OUT_DIR/.batch
ACCEPT_FLAG = "--accept-points-change"


class PointsChanged(RuntimeError):
    """An exercise's maximum differs from the one the batch published, and the change was not accepted."""


@dataclass(frozen=True)
class MaximumChange:
    """One exercise whose maximum moved: ``published`` (points, as the batch published it) → ``now`` (points)."""

    stem: str
    published: float
    now: float

    def line(self) -> str:
        """"ex1_ratio: maximum 10 → 11 since the published batch"."""
        return f"{self.stem}: maximum {self.published:g} → {self.now:g} since the published batch"


def current_maxima() -> dict[str, float]:
    """``{stem: maximum points}`` of every exercise in ``grader/points.yaml`` (``ExercisePoints.max_score``)."""
    from grader.points import load_points

    return {stem: ex.max_score for stem, ex in load_points().exercises.items()}


def _read_json(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def published_maxima(state: Path, records: Iterable) -> dict[str, float]:
    """``{stem: maximum}`` as the batch published it: ``state/maxima.json``, else the maxima its full-profile graded
    records carry (per exercise the most common, a tie to the larger), else {} (a fresh batch).

    Args:
        state: ``OUT_DIR/.batch``. records: the batch's ``grader.records.gradebook.StudentRecord`` objects.
    """
    saved = _read_json(Path(state) / MAXIMA)
    if saved is not None:
        return {str(k): float(v) for k, v in saved.items() if isinstance(v, (int, float))}
    seen: dict[str, Counter] = {}
    for r in records:
        if r.status == "graded" and r.profile == "full":
            for stem, v in r.exercise_scores.items():
                seen.setdefault(stem, Counter())[float(v.get("max_score") or 0.0)] += 1
    return {stem: max(c.items(), key=lambda kv: (kv[1], kv[0]))[0] for stem, c in seen.items()}


def maximum_changes(before: dict[str, float], now: dict[str, float]) -> list[MaximumChange]:
    """The exercises in both whose maximum differs (1e-9 points tolerance), in ``now``'s order."""
    return [MaximumChange(stem, before[stem], m) for stem, m in now.items()
            if stem in before and not math.isclose(before[stem], m, rel_tol=0.0, abs_tol=1e-9)]


def check_points_change(state: Path, records: Iterable, *, accept: bool,
                        now: dict[str, float] | None = None) -> list[MaximumChange]:
    """Refuse a batch run whose points file moved an exercise's maximum, unless ``accept``; then (or when nothing
    moved) write ``state/maxima.json`` with ``now`` and keep an accepted change in ``state/points_changes.json``.

    Args:
        state: ``OUT_DIR/.batch`` (exists). records: the batch's published ``StudentRecord`` objects.
        accept: the TA passed :data:`ACCEPT_FLAG`. now: the maxima this run grades with (default
            :func:`current_maxima`).

    Returns:
        The accepted changes ([] when nothing moved).

    Raises:
        PointsChanged: naming every changed exercise and the flag (nothing is written).
    """
    now = current_maxima() if now is None else now
    changes = maximum_changes(published_maxima(state, records), now)
    if changes and not accept:
        raise PointsChanged(
            f"the points changed an exercise's maximum: {'; '.join(c.line() for c in changes)}. Every grade already "
            "published (and an LMS item made for the old maximum) disagrees with the new ones: rerun with "
            f"{ACCEPT_FLAG} to regrade the batch with the new maxima (then update the LMS items' points: `export` "
            "names the change), or restore grader/points.yaml.")
    if changes:
        kept = _read_json(Path(state) / CHANGES) or {}
        for c in changes:
            before = kept.get(c.stem)
            kept[c.stem] = {"published": before.get("published", c.published) if isinstance(before, dict) else
                            c.published, "now": c.now}
        atomic_write_text(Path(state) / CHANGES, json.dumps(kept, indent=2) + "\n")
    atomic_write_text(Path(state) / MAXIMA, json.dumps(now, indent=2) + "\n")
    return changes


def export_warnings(batch_dir: Path, item_maxima: dict[str, float]) -> list[str]:
    """One warning per exported item whose maximum (``item_maxima``: ``{stem: points}`` as the export writes them)
    differs from the one published before an accepted points change (``OUT_DIR/.batch/points_changes.json``)."""
    from grader.records.gradebook import STATE_DIR

    kept = _read_json(Path(batch_dir) / STATE_DIR / CHANGES) or {}
    before = {stem: float(v["published"]) for stem, v in kept.items()
              if isinstance(v, dict) and isinstance(v.get("published"), (int, float))}
    return [f"{c.line()} (grade-batch {ACCEPT_FLAG}): an LMS item made for {c.published:g} points refuses or "
            f"misreads these grades; set the item's points to {c.now:g} before importing"
            for c in maximum_changes(before, item_maxima)]


def check_batch_points(run) -> None:
    """:func:`check_points_change` for one ``grader.batch_run.BatchRun`` before it grades: its published
    records, its ``accept_points_change``; a refusal closes a connected cluster first (then raises
    :class:`PointsChanged`), an accepted change is said through ``run.say``."""
    try:
        changes = check_points_change(run.state, list(run.records.values()), accept=run.accept_points_change)
    except PointsChanged:
        if run.cluster_runner is not None:
            run.cluster_runner.close()
        raise
    for change in changes:
        run.say(f"warning: {change.line()} ({ACCEPT_FLAG}): the batch is regraded with the new maximum; update the "
                "LMS item's points before the next import (`export` warns)")
