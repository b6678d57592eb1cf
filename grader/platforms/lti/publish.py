"""Publish a graded batch to the platform: one AGS line item per exercise, one score per rostered student.

The students come from the platform (NRPS): a gradebook row is matched to a member
by the member's ``lis_person_sourcedid`` (the SIS id the LMS sends) or, failing that,
the email, against the row's ``student_id`` (the batch's identity). A row that
matches no member, or more than one, is never posted: it is listed in the outcome
for the TA (no identity is ever invented). Scores go through :class:`Passback`, so
a rerun posts only what changed. The line items' maxima are the exercises'
maxima from ``points.yaml`` (AGS 2.0 §3.2: ``scoreMaximum``).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

from grader.platforms.lti.passback import Passback, PostOutcome
from grader.platforms.lti.services import LineItem, Member, PlatformServices


@dataclass
class PublishOutcome:
    """What one publication did: scores per status, and the rows it could not match to a platform user."""

    outcomes: list[PostOutcome] = field(default_factory=list)
    unmatched: list[str] = field(default_factory=list)
    ambiguous: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def count(self, status: str) -> int:
        """How many scores ended with ``status`` (posted, unchanged, pending)."""
        return sum(1 for o in self.outcomes if o.status == status)


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


def publish_gradebook(gradebook: Path, maxima: dict[str, float], services: PlatformServices, passback: Passback,
                      *, lineitems_url: str, memberships_url: str, label_prefix: str = "PPO") -> PublishOutcome:
    """Post every graded row of ``gradebook`` (gradebook.csv, CONTRACT's columns) to the platform.

    Args:
        maxima: exercise stem → maximum points (``points.yaml``).
        lineitems_url / memberships_url: the context's AGS and NRPS endpoints (from an instructor's launch).

    Raises:
        ValueError: if the gradebook lacks ``student_id`` or ``status``, or a score exceeds its maximum;
            ``grader.records.gradebook.FastPreviewRefused`` when the batch beside it was graded with ``--profile fast``
            (a preview is never posted as a grade; nothing is posted); ``grader.records.gradebook.GraderFaultRefused``
            when any student of the batch is a grader fault (nothing is posted).
    """
    from grader.records.gradebook import read_records, refuse_fast_preview, refuse_grader_faults

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
    items = {stem: services.ensure_line_item(lineitems_url, LineItem(label=f"{label_prefix} {stem}", scoreMaximum=top,
                                                                     resourceId=stem, tag="ppo-exercise"))
             for stem, top in maxima.items()}
    for row in rows:
        sid = row["student_id"]
        if sid not in matched:
            continue
        if row["status"] not in ("graded", "rejected", "empty", "timed-out", "no-submission"):
            outcome.skipped.append(sid)
            continue
        for stem, item in items.items():
            score = float(row.get(stem) or 0.0)
            outcome.outcomes.append(passback.post(services, item.id, matched[sid], score, maxima[stem]))
    return outcome
