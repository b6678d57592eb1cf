"""The class of a batch: who is in the submissions folder (one student per sub-folder or ``.zip``).

TA side. :func:`discover` lists the students and the problems of the folder's entries
(duplicated ids, symbolic links, names that are not UTF-8, reserved ids); :func:`class_list`
applies ``--latest-only``. The first stage of ``grader.batch.run_batch``; also used by
``ppo-course similarity``.
"""

from __future__ import annotations

import os
from pathlib import Path

from grader.intake.submission import _JUNK_NAMES, Entry, _display_name
from grader.records.gradebook import RESERVED_IDS


def discover(submissions_dir: Path) -> tuple[list[Entry], list[str]]:
    """List the students of a submissions folder.

    Each sub-folder or ``*.zip`` file is one student; its name (without
    ``.zip``) is the student id. Hidden entries (``.x``) and ``__MACOSX`` are
    ignored; other files are stray and skipped with a warning. Two entries
    with the same id (``alice/`` and ``alice.zip``) give one entry with both
    sources and a ``problem``: the student is rejected, the batch carries on.
    A top-level symlink, a non-UTF-8 name or a reserved id is also a problem.

    Returns:
        (entries sorted by student id, warnings for the TA).

    Raises:
        NotADirectoryError / FileNotFoundError: if ``submissions_dir`` is not a folder.
    """
    submissions_dir = Path(submissions_dir)
    if not submissions_dir.is_dir():
        raise NotADirectoryError(f"submissions folder {submissions_dir} does not exist or is not a folder")
    warnings: list[str] = []
    by_id: dict[str, list[tuple[Path, str, str | None]]] = {}
    with os.scandir(os.fsencode(submissions_dir)) as it:
        raw_entries = sorted(it, key=lambda e: e.name)
    for de in raw_entries:
        name, valid_utf8 = _display_name(de.name)
        if name.startswith(".") or name in _JUNK_NAMES:
            continue
        path = Path(os.fsdecode(de.path))
        problem: str | None = None
        if de.is_symlink():
            kind = "zip" if name.lower().endswith(".zip") else "dir"
            problem = f"'{name}' is a symbolic link; submit the folder or zip itself"
        elif de.is_dir(follow_symlinks=False):
            kind = "dir"
        elif de.is_file(follow_symlinks=False) and name.lower().endswith(".zip"):
            kind = "zip"
        else:
            warnings.append(f"skipped stray file {name!r} in {submissions_dir} (not a folder or .zip)")
            continue
        student_id = name[: -len(".zip")] if kind == "zip" and name.lower().endswith(".zip") else name
        if not valid_utf8 and problem is None:
            problem = f"the name {name!r} is not valid UTF-8; rename it to the student id"
        if student_id in RESERVED_IDS and problem is None:
            problem = f"the student id {student_id!r} is reserved for the batch's own files"
        by_id.setdefault(student_id, []).append((path, kind, problem))
    entries: list[Entry] = []
    for student_id in sorted(by_id):
        found = by_id[student_id]
        if len(found) > 1:
            names = " and ".join(repr(p.name) for p, _, _ in found)
            entries.append(
                Entry(
                    student_id,
                    [p for p, _, _ in found],
                    found[0][1],  # type: ignore[arg-type]
                    problem=f"two submissions share the id {student_id!r} ({names}); keep one and regrade",
                )
            )
            warnings.append(f"rejected {student_id!r}: {names} share the same student id")
        else:
            path, kind, problem = found[0]
            entries.append(Entry(student_id, [path], kind, problem))  # type: ignore[arg-type]
    return entries, warnings


def class_list(submissions_dir: Path, latest_only: bool, attempt_rule=None) -> tuple[list[Entry], list[str], object]:
    """:func:`discover`'s students, grouped by the TA's stated attempt rule; (entries, warnings, selection).

    With ``latest_only`` or an ``attempt_rule`` (``grader.intake.attempts.AttemptRule``: a roster column or a
    pattern), folders are mapped to student ids by that rule only, never by a rule guessed from folder
    names; ``selection`` (``grader.intake.attempts.Selection``, None without a rule) says what was left out and why.

    Raises:
        grader.intake.attempts.AttemptRuleError: ``latest_only`` without a stated rule, or a student with several
            folders without ``latest_only``.
    """
    entries, warnings = discover(submissions_dir)
    if not latest_only and attempt_rule is None:
        return entries, warnings, None
    from grader.intake.attempts import AttemptRule, select

    selection = select(entries, attempt_rule or AttemptRule(), latest_only=latest_only)
    return selection.entries, warnings + selection.warnings, selection
