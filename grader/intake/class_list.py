"""The class of a batch: who is in the submissions folder (one student per sub-folder or ``.zip``).

TA side. :func:`discover` lists the students and the problems of the folder's entries
(duplicated ids, symbolic links, names that are not UTF-8, reserved ids); :func:`class_list`
applies ``--latest-only``. The first stage of ``grader.batch.run_batch``; also used by
``ppo-course similarity``.
"""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

from grader.records.gradebook import is_reserved_id
from ppo_course.submission_rules import JUNK_NAMES, Entry, display_name


def _entries_by_id(by_id: dict[str, list[tuple[Path, str, str | None]]]) -> tuple[list[Entry], list[str]]:
    """One ``Entry`` per student id, sorted, and a warning per id that two entries share (that student is rejected)."""
    warnings: list[str] = []
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


def discover(submissions_dir: Path) -> tuple[list[Entry], list[str]]:
    """List the students of a submissions folder.

    Each sub-folder or ``*.zip`` file is one student; its name (without
    ``.zip``) is the student id. Hidden entries (``.x``) and ``__MACOSX`` are
    ignored; another archive (``zoe.tar.gz``, `OTHER_ARCHIVES`) is its student, rejected with what to do;
    other files are stray and skipped with a warning. Two entries
    with the same id (``alice/`` and ``alice.zip``) give one entry with both
    sources and a ``problem``: the student is rejected, the batch carries on.
    A top-level symlink, a non-UTF-8 name, a reserved id, or a name that would show like another id
    (`id_problem`: invisible characters, letters of two scripts) is also a problem; ids that differ only by
    case or width are named in a warning (`look_alike_warnings`).

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
        name, valid_utf8 = display_name(de.name)
        if name.startswith(".") or name in JUNK_NAMES:
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
        elif de.is_file(follow_symlinks=False) and other_archive_suffix(name):
            suffix = other_archive_suffix(name)
            kind = "zip"
            problem = (f"'{name}' is a {suffix} archive; the grader reads a folder or a .zip: unpack it into a "
                       f"folder named by the student id (or zip it) and regrade")
        else:
            warnings.append(f"skipped stray file {name!r} in {submissions_dir} (not a folder or .zip)")
            continue
        suffix = ".zip" if kind == "zip" and name.lower().endswith(".zip") else other_archive_suffix(name)
        student_id = name[: -len(suffix)] if kind == "zip" and suffix else name
        if not valid_utf8 and problem is None:
            problem = f"the name {name!r} is not valid UTF-8; rename it to the student id"
        if is_reserved_id(student_id) and problem is None:
            problem = f"the student id {student_id!r} is reserved for the batch's own files"
        if problem is None:
            problem = id_problem(student_id)
        by_id.setdefault(student_id, []).append((path, kind, problem))
    entries, duplicates = _entries_by_id(by_id)
    warnings += duplicates
    warnings += look_alike_warnings(list(by_id))
    return entries, warnings


#: Archive formats other than zip, longest first: such a file is its student's submission, rejected with what to do.
OTHER_ARCHIVES = (".tar.gz", ".tar.bz2", ".tar.xz", ".tgz", ".tbz2", ".txz", ".tar", ".7z", ".rar", ".gz", ".bz2", ".xz")


def other_archive_suffix(name: str) -> str | None:
    """The archive suffix of a file name that is not a zip (``"zoe.tar.gz"`` → ``".tar.gz"``), or None."""
    lower = name.lower()
    return next((s for s in OTHER_ARCHIVES if lower.endswith(s) and len(lower) > len(s)), None)


def batch_folder_problem(submissions_dir: Path) -> str | None:
    """Why ``submissions_dir`` cannot be a batch's folder of students, or None.

    A folder that holds an exercise module itself (``ex1_ratio.py``) is one student's submission, not a class;
    a folder with no student (no sub-folder, ``.zip`` or other archive) would give an empty gradebook.
    """
    from ppo_course.syllabus import EXERCISES

    modules = [f"{stem}.py" for stem in EXERCISES if (Path(submissions_dir) / f"{stem}.py").is_file()]
    if modules:
        return (f"{submissions_dir} holds {', '.join(modules)} itself: it looks like one student's submission. "
                f"Grade it with `ppo-course grade {submissions_dir} --out results.json`, or give grade-batch the "
                "folder that holds one sub-folder or .zip per student")
    entries, _ = discover(submissions_dir)
    if not entries:
        return (f"{submissions_dir} holds no submission: each student is a sub-folder or a .zip named by the "
                "student id")
    return None


#: Characters a student id may not hold: controls, format characters (zero-width, BOM, bidi), line and
#: paragraph separators and every space but U+0020 (NBSP and the like look like a plain space or nothing).
_INVISIBLE = {"Cc", "Cf", "Zl", "Zp", "Zs"}


#: Scripts written together in one name (Japanese mixes kanji and kana; Korean may hold hanja).
_WRITTEN_TOGETHER = {"HIRAGANA": "CJK", "KATAKANA": "CJK", "HANGUL": "CJK"}


def _scripts(student_id: str) -> set[str]:
    """The scripts of an id's letters, by the first word of their Unicode name ("LATIN", "CYRILLIC", ...)."""
    names = (unicodedata.name(ch, "UNKNOWN").split()[0] for ch in student_id if ch.isalpha())
    return {_WRITTEN_TOGETHER.get(n, n) for n in names}


def id_problem(student_id: str) -> str | None:
    """Why a folder's name cannot be a student id, or None.

    A name with invisible characters or spaces at its ends, or letters of two scripts ("аlice" with a
    Cyrillic a), shows in the gradebook exactly like a classmate's id: the
    submission is rejected with the code points named, so the TA renames it. Ids in one script (any
    script) with inner plain spaces are fine.
    """
    odd = [ch for ch in student_id if unicodedata.category(ch) in _INVISIBLE and ch != " "]
    if odd or student_id != student_id.strip(" "):
        points = ", ".join(f"U+{ord(ch):04X}" for ch in odd) or "a space at an end"
        return (f"the name {student_id!r} holds invisible or space characters ({points}) and would show "
                "like another id; rename it to the student id")
    scripts = _scripts(student_id)
    if len(scripts) > 1:
        return (f"the name {student_id!r} mixes letters of several scripts ({', '.join(sorted(scripts))}) and "
                "would show like another id; rename it to the student id")
    return None


def look_alike_warnings(student_ids: list[str]) -> list[str]:
    """Warnings naming ids that differ only by case or Unicode width (NFKC, case-folded): "ALICE" beside
    "alice". Neither is rejected (the grader cannot tell which is the student's own); the TA is told."""
    groups: dict[str, list[str]] = {}
    for sid in student_ids:
        groups.setdefault(unicodedata.normalize("NFKC", sid).casefold(), []).append(sid)
    return [f"the ids {' and '.join(repr(s) for s in sorted(same))} differ only by case or character width; "
            "check that each is a different student" for same in groups.values() if len(same) > 1]


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
