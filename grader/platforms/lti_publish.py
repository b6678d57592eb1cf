"""Publish a graded batch to the platform: one AGS line item per exercise, one score per rostered student.

The students come from the platform (NRPS): a gradebook row is matched to a member
by the member's ``lis_person_sourcedid`` (the SIS id the LMS sends) or, failing that,
the email, against the row's ``student_id`` (the batch's identity). A row that
matches no member, or more than one, is never posted: it is listed in the outcome
for the TA (no identity is ever invented). Only a published, unfaulted score is
posted: a row whose ``status`` is not ``graded`` (a grader fault, a crash, a time-out,
a rejected or empty submission, a row still being graded) or whose scores are missing
or not finite numbers is skipped with its reason, and the LMS keeps what it had. Scores go
through :class:`Passback`, so a rerun posts only what changed. The line items' maxima
are the exercises' maxima from ``points.yaml`` (AGS 2.0 §3.2: ``scoreMaximum``).
:meth:`PublishOutcome.report` says, per student, what was posted or skipped and why.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from pathlib import Path

from lms.lti.passback import Passback, PostOutcome
from lms.lti.services import LineItem, Member, PlatformServices


POSTED_STATUS = "graded"  # the one gradebook status whose scores are published to the LMS


@dataclass
class PublishOutcome:
    """What one publication did: scores per status, and the rows it did not post, with why.

    ``skipped`` maps a student id to the reason nothing was posted for that student (not graded,
    no score); ``unmatched`` and ``ambiguous`` list the rows no single LMS member matches;
    ``students`` maps each posted student to their score outcomes; ``warnings`` holds one line per line
    item whose maximum on the platform differs from the batch's (a points change since the item was made).
    """

    outcomes: list[PostOutcome] = field(default_factory=list)
    unmatched: list[str] = field(default_factory=list)
    ambiguous: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    students: dict[str, list[PostOutcome]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def count(self, status: str) -> int:
        """How many scores ended with ``status`` (posted, unchanged, pending)."""
        return sum(1 for o in self.outcomes if o.status == status)

    def report(self) -> list[dict[str, str]]:
        """One row per student, sorted by id: ``student_id``, ``outcome`` and ``why``.

        ``outcome`` is ``posted`` (at least one score reached the LMS now), ``unchanged`` (the LMS
        already had every score), ``pending`` (the LMS did not acknowledge a score: ``ppo-course lti
        retry``), or ``skipped``.
        """
        rows = []
        for sid, outs in self.students.items():
            states = {o.status for o in outs}
            state = "pending" if "pending" in states else "posted" if "posted" in states else "unchanged"
            errors = "; ".join(o.error for o in outs if o.error)
            why = errors or (f"{len(outs)} score(s) to LMS user {outs[0].user_id}" if outs else "no exercise to post")
            rows.append({"student_id": sid, "outcome": state, "why": why})
        rows += [{"student_id": sid, "outcome": "skipped", "why": why} for sid, why in self.skipped.items()]
        rows += [{"student_id": sid, "outcome": "skipped", "why": "no member of the LMS course has this SIS id or email"}
                 for sid in self.unmatched]
        rows += [{"student_id": sid, "outcome": "skipped", "why": "several members of the LMS course match this id"}
                 for sid in self.ambiguous]
        return sorted(rows, key=lambda r: r["student_id"])


def row_scores(row: dict[str, str], stems: list[str]) -> tuple[dict[str, float] | None, str]:
    """The row's scores per exercise stem, or (None, why) when the row must not be posted.

    A row is posted only when its ``status`` is ``graded`` and every exercise's cell is a
    finite number (a grader fault has no score; NaN never passes).
    """
    status = (row.get("status") or "").strip()
    if status != POSTED_STATUS:
        return None, f"status {status or 'missing'!r}, not graded: nothing published for this student"
    scores = {}
    for stem in stems:
        try:
            value = float(row.get(stem) or "nan")
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            return None, f"no score for {stem} (cell {row.get(stem)!r}): nothing published for this student"
        scores[stem] = value
    return scores, ""


def match_members(student_ids: list[str], members: list[Member]) -> tuple[dict[str, str], list[str], list[str]]:
    """student_id → platform user id, by SIS id then email; plus (unmatched, ambiguous) student ids."""
    by_key: dict[str, set[str]] = {}
    for m in members:
        for key in {m.lis_person_sourcedid, m.email}:
            if key:
                by_key.setdefault(key.strip().lower(), set()).add(m.user_id)
    matched, unmatched, ambiguous = {}, [], []
    for sid in student_ids:
        users = by_key.get(sid.strip().lower(), set())
        if len(users) == 1:
            matched[sid] = next(iter(users))
        elif users:
            ambiguous.append(sid)
        else:
            unmatched.append(sid)
    return matched, unmatched, ambiguous


def maximum_warnings(items: dict[str, LineItem], maxima: dict[str, float]) -> list[str]:
    """One warning per line item whose maximum on the platform (``LineItem.score_maximum``, points) differs from
    the batch's maximum for its exercise (``maxima``, points): the item was made before a points change, and the
    platform scales each posted score (AGS 2.0 §3.4: ``scoreGiven`` / ``scoreMaximum``) to the item's maximum."""
    return [f"the LMS line item '{item.label}' is worth {item.score_maximum:g} points but this batch grades "
            f"{stem} out of {maxima[stem]:g}: the LMS rescales every score to {item.score_maximum:g}; set the "
            f"item's points to {maxima[stem]:g} in the LMS so that its gradebook shows the points a student earned"
            for stem, item in items.items() if abs(item.score_maximum - maxima[stem]) > 1e-9]


def publish_gradebook(gradebook: Path, maxima: dict[str, float], services: PlatformServices, passback: Passback,
                      *, lineitems_url: str, memberships_url: str, label_prefix: str = "PPO") -> PublishOutcome:
    """Post every graded row of ``gradebook`` (gradebook.csv, CONTRACT's columns) to the platform.

    One line item per exercise the gradebook has a column for; a row is posted only when
    :func:`row_scores` allows it (``graded``, every score a finite number), else it is skipped with why.

    Args:
        maxima: exercise stem → maximum points (``points.yaml``).
        lineitems_url / memberships_url: the context's AGS and NRPS endpoints (from an instructor's launch).

    Raises:
        ValueError: if the gradebook lacks ``student_id`` or ``status``, or a score exceeds its maximum;
            ``grader.records.gradebook.FastPreviewRefused`` when the batch beside it was graded with ``--profile fast``
            (a preview is never posted as a grade; nothing is posted); ``grader.records.gradebook.GraderFaultRefused``
            when any student of the batch is a grader fault (nothing is posted).
    """
    from grader.records.gradebook import read_records, refuse_fast_preview
    from grader.records.faults import refuse_grader_faults

    with gradebook.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    if rows and not {"student_id", "status"} <= set(rows[0]):
        raise ValueError(f"{gradebook}: not a gradebook.csv (needs student_id and status columns)")
    records = read_records(gradebook.parent, [r["student_id"] for r in rows])
    refuse_fast_preview(records, gradebook.parent)
    refuse_grader_faults(records, gradebook.parent)  # a grader fault has no score: never posted, never as 0
    outcome = PublishOutcome()
    matched, outcome.unmatched, outcome.ambiguous = match_members(
        [r["student_id"] for r in rows], services.members(memberships_url))
    graded = [stem for stem in maxima if not rows or stem in rows[0]]  # the exercises this batch graded
    items = {stem: services.ensure_line_item(lineitems_url, LineItem(label=f"{label_prefix} {stem}",
                                                                     scoreMaximum=maxima[stem], resourceId=stem,
                                                                     tag="ppo-exercise"))
             for stem in graded}
    outcome.warnings = maximum_warnings(items, maxima)
    for row in rows:
        sid = row["student_id"]
        if sid not in matched:
            continue
        scores, why = row_scores(row, list(items))
        if scores is None:
            outcome.skipped[sid] = why
            continue
        posts = [passback.post(services, item.id, matched[sid], scores[stem], maxima[stem])
                 for stem, item in items.items()]
        outcome.students[sid] = posts
        outcome.outcomes += posts
    return outcome
