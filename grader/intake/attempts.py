"""Whose submission is which folder: attempts grouped only by a rule the TA states.

``grade-batch`` finds one entry per folder or ``.zip`` (``grader.intake.class_list.discover``).
When a student has several submission folders, which ones belong together is
never guessed from the names (a student named ``alice_2`` is not alice's second
attempt unless the TA says so). The TA states the rule, one of:

* a roster (``--roster CSV``, ``lms.roster``) whose ``attempts`` column
  lists each student's folders, oldest first (``amy;amy_2``); a folder named
  like a roster ``student_id`` is that student's own;
* a pattern (``--attempts REGEX``), a Python regular expression that must
  match a whole folder name, with a named group ``student`` (the student id)
  and optionally ``attempt`` (the order: compared as a number when it is
  digits, else as text). A folder the pattern does not match is attempt 0 of
  the student it names. With a roster too, a folder that is a roster
  ``student_id`` is always that student's own, never another's attempt.

Then ``--latest-only`` keeps each student's last attempt, graded and written
under the student id (``OUT_DIR/amy/``, gradebook row ``amy``, the folder
graded in ``batch.json``'s ``sources``). Without ``--latest-only`` a student
with several folders is an error that names them. No folder is ever dropped
silently: :meth:`Selection.write` records every folder left out and why in
``OUT_DIR/attempts.csv`` and ``OUT_DIR/attempts.md``, and each is also a
warning on the TA's terminal. A folder that belongs to nobody on the roster is
graded under its own name, and the roster students with no folder are listed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from grader.records.gradebook import ATTEMPTS_CSV, ATTEMPTS_MD
from lms.roster import Roster


class AttemptRuleError(ValueError):
    """A grouping that cannot be applied (no rule, a bad pattern, a student with several folders)."""


@dataclass(frozen=True)
class AttemptRule:
    """How folders map to students: a roster, a pattern, or both (module docstring).

    Raises (on construction):
        AttemptRuleError: if the pattern does not compile or has no ``student`` group.
    """

    roster: Roster | None = None
    pattern: str | None = None

    def __post_init__(self) -> None:
        if self.pattern is None:
            return
        try:
            compiled = re.compile(self.pattern)
        except re.error as exc:
            raise AttemptRuleError(f"--attempts {self.pattern!r} is not a regular expression: {exc}") from None
        if "student" not in compiled.groupindex:
            raise AttemptRuleError(f"--attempts {self.pattern!r} needs a named group (?P<student>...)")

    @property
    def stated(self) -> bool:
        """True when the TA stated a rule (a roster with an ``attempts`` column, or a pattern)."""
        return self.pattern is not None or (self.roster is not None and self.roster.has_attempts)

    def owner(self, folder: str) -> tuple[str, tuple[int, int, str], str]:
        """(student id, order key, why) of a folder under this rule."""
        if self.roster is not None:
            owners = self.roster.owner_of_folder()
            if folder in owners:
                sid = owners[folder]
                order = self.roster.students[sid].folders.index(folder)
                why = "the roster's attempts column" if self.roster.has_attempts else "the roster's student_id"
                return sid, (order, 0, ""), why
        if self.pattern is not None:
            m = re.fullmatch(self.pattern, folder)
            if m and m["student"]:
                n = m.groupdict().get("attempt") or ""
                key = (1, int(n), "") if n.isdigit() else (1, 0, n) if n else (0, 0, "")
                return m["student"], key, f"--attempts {self.pattern!r}"
        return folder, (0, 0, ""), "its own folder name"


@dataclass
class LeftOut:
    """A folder not graded, the student it belongs to, and why."""

    folder: str
    student_id: str
    why: str


@dataclass
class Selection:
    """The entries to grade (renamed to the student ids) and what was left out, with warnings."""

    entries: list
    left_out: list[LeftOut] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    graded_from: dict[str, str] = field(default_factory=dict)  # student id -> folder graded, where they differ
    absent: list[str] = field(default_factory=list)  # roster students with no folder: gradebook rows "no-submission"

    def write(self, out_dir: Path) -> None:
        """``OUT_DIR/attempts.csv`` (folder, student_id, graded, why) and ``attempts.md`` (atomic writes).

        Folder names, ids and reasons are the student's text: every CSV cell goes through
        ``text_safety.csv_text`` (no formula) and every Markdown piece through ``md_inline`` (no HTML,
        link, image or code span it could close).
        """
        from ppo_course.atomic_files import atomic_write_text
        from ppo_course.text_safety import csv_text, md_inline

        rows = [["folder", "student_id", "graded", "why"]]
        rows += [[folder, sid, "yes", "the student's latest attempt"] for sid, folder in sorted(self.graded_from.items())]
        rows += [[item.folder, item.student_id, "no", item.why] for item in self.left_out]
        atomic_write_text(Path(out_dir) / ATTEMPTS_CSV, csv_text(rows))
        md = lambda text: md_inline(text, 400)  # noqa: E731
        lines = ["# Attempts: which folder was graded for whom", ""]
        lines += [f"- {md(folder)} graded as {md(sid)}" for sid, folder in sorted(self.graded_from.items())]
        lines += [f"- {md(i.folder)} left out ({md(i.student_id)}): {md(i.why)}" for i in self.left_out]
        lines += [f"- note: {md(w)}" for w in self.warnings]
        atomic_write_text(Path(out_dir) / ATTEMPTS_MD, "\n".join(lines) + "\n")


def record_selection(out_dir: Path, selection: Selection | None) -> None:
    """``OUT_DIR/attempts.csv`` and ``attempts.md`` of a batch: :meth:`Selection.write`, or, for a batch graded with
    no attempt rule (``selection`` None: every folder under its own name), both files removed, so that an earlier
    run's grouping ("amy_2 graded as amy") never contradicts this gradebook."""
    if selection is not None:
        selection.write(out_dir)
        return
    for name in (ATTEMPTS_CSV, ATTEMPTS_MD):
        (Path(out_dir) / name).unlink(missing_ok=True)


def rule_from_options(roster: Path | None, pattern: str | None) -> AttemptRule | None:
    """The rule a TA states on the command line (``--roster CSV``, ``--attempts REGEX``), or None without either.

    The one reading of those options, shared by ``grade-batch`` and ``similarity``.

    Raises:
        AttemptRuleError: a pattern that does not compile or has no ``student`` group.
        lms.roster.RosterError (a ValueError): a roster that cannot be read.
    """
    if roster is None and pattern is None:
        return None
    from lms.roster import read_roster

    return AttemptRule(roster=read_roster(roster) if roster else None, pattern=pattern)


def select(entries: list, rule: AttemptRule, *, latest_only: bool) -> Selection:
    """Group ``entries`` (``grader.intake.submission.Entry``, one per folder) by student under ``rule``.

    Args:
        entries: what ``discover`` found, one per folder or zip.
        rule: the TA's stated rule.
        latest_only: keep each student's last attempt; without it, a student with several folders is an error.

    Returns:
        a :class:`Selection` whose entries carry the student id (the folder stays in ``sources``).

    Raises:
        AttemptRuleError: ``latest_only`` without a stated rule, or several folders for one student without it.
    """
    if latest_only and not rule.stated:
        raise AttemptRuleError("--latest-only needs a rule for which folders are one student's attempts: a --roster "
                               "with an 'attempts' column, or --attempts PATTERN (see the TA guide); folder names "
                               "are never guessed")
    groups: dict[str, list[tuple[tuple[int, int, str], str, object, str]]] = {}
    for e in entries:
        sid, key, why = rule.owner(e.student_id)
        groups.setdefault(sid, []).append((key, e.student_id, e, why))
    selection = Selection(entries=[])
    for sid in sorted(groups):
        found = sorted(groups[sid], key=lambda g: (g[0], g[1]))
        if len(found) > 1 and not latest_only:
            names = ", ".join(f[1] for f in found)
            raise AttemptRuleError(f"{sid!r} has {len(found)} submission folders ({names}) under {found[-1][3]}; "
                                   "add --latest-only to grade the last one")
        _, folder, entry, why = found[-1]
        selection.entries.append(replace(entry, student_id=sid))
        if folder != sid:
            selection.graded_from[sid] = folder
        for _, earlier, _, _ in found[:-1]:
            selection.left_out.append(LeftOut(earlier, sid, f"an earlier attempt of {sid!r} ({why}); "
                                                            f"{folder!r} is the latest"))
    _roster_notes(rule.roster, groups, selection)
    selection.warnings += [f"--latest-only: left out {i.folder!r}: {i.why}" for i in selection.left_out]
    return selection


def _roster_notes(roster: Roster | None, groups: dict, selection: Selection) -> None:
    if roster is None:
        return
    strangers = sorted(sid for sid in groups if sid not in roster)
    if strangers:
        selection.warnings.append(f"{len(strangers)} folder(s) belong to nobody on the roster and are graded under "
                                  f"their own names: {', '.join(strangers)}")
    absent = [sid for sid in roster.students if sid not in groups]
    selection.absent = absent
    if absent:
        selection.warnings.append(f"{len(absent)} roster student(s) have no submission folder: {', '.join(absent)}; "
                                  "they are in the gradebook with status no-submission and 0 points")
