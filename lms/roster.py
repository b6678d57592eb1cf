"""The course roster: one CSV, read by one reader, the only source of a student's identity.

Every instructor-side tool that needs to know who a student is reads the
roster through :func:`read_roster`: ``grade-batch --roster`` (which folders
are whose attempts, ``grader.intake.attempts``), ``export --roster`` (the LMS
identities, ``grader.reports.export``) and the quiz server (``quiz_bank.instructor.server.auth``
delegates here). Files are keyed by the roster's ``student_id``; a folder
name is an identity only when it *is* a roster ``student_id`` (or when there
is no roster at all, and then the tools say so).

Columns (UTF-8 CSV with a header row; only ``student_id`` is required):

==================  ========================================================
``student_id``      the course's id of the student; the key of every file
``name``            display name (Canvas's ``Student`` column)
``email``           Moodle's ``Email address`` user field
``canvas_id``       Canvas's numeric user ``ID``
``sis_user_id``     Canvas's ``SIS User ID``
``sis_login_id``    Canvas's ``SIS Login ID``
``section``         Canvas's ``Section``
``idnumber``        Moodle's ``ID number`` user field
``username``        Moodle's ``Username`` user field
``attempts``        the student's submission folders, oldest first, separated
                    by ``;`` (``amy;amy_2``); empty means the folder named
                    ``student_id`` (``.zip`` or not)
==================  ========================================================

A missing field stays empty: nothing here (or downstream) fills it with the
student id or a folder name.
"""

from __future__ import annotations

import csv
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

MAX_ID_LENGTH = 200
IDENTITY_FIELDS = ("name", "email", "canvas_id", "sis_user_id", "sis_login_id", "section", "idnumber", "username")
ATTEMPTS_COLUMN = "attempts"
ATTEMPT_SEPARATOR = ";"


class RosterError(ValueError):
    """A roster file that cannot be used; the message names the file and line."""


class RosterEntry(BaseModel):
    """One student of the roster: the id, the LMS identities (``""`` when absent) and the attempt folders."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    student_id: str
    name: str = ""
    email: str = ""
    canvas_id: str = ""
    sis_user_id: str = ""
    sis_login_id: str = ""
    section: str = ""
    idnumber: str = ""
    username: str = ""
    attempts: tuple[str, ...] = Field(default_factory=tuple)

    @property
    def folders(self) -> tuple[str, ...]:
        """The student's submission folder names, oldest first (``(student_id,)`` when the roster lists none)."""
        return self.attempts or (self.student_id,)


class Roster(BaseModel):
    """The roster in file order: ``students`` keyed by ``student_id``; ``path`` for messages."""

    model_config = ConfigDict(frozen=True)

    path: str = ""
    students: dict[str, RosterEntry] = Field(default_factory=dict)
    has_attempts: bool = False

    def __contains__(self, student_id: object) -> bool:
        return student_id in self.students

    def get(self, student_id: str) -> RosterEntry | None:
        """The entry of ``student_id``, or None when the student is not on the roster."""
        return self.students.get(student_id)

    def owner_of_folder(self) -> dict[str, str]:
        """``{folder name: student_id}`` for every folder the roster assigns (``attempts`` or the id itself)."""
        return {folder: sid for sid, entry in self.students.items() for folder in entry.folders}

    def rows(self, columns: tuple[str, ...]) -> list[dict[str, str]]:
        """The roster as plain rows holding exactly ``columns`` (``""`` for an absent field)."""
        return [{c: str(getattr(e, c, "")) if c != ATTEMPTS_COLUMN else ATTEMPT_SEPARATOR.join(e.attempts)
                 for c in columns} for e in self.students.values()]


def _entry(path: Path, line: int, row: dict[str, str], seen_folders: dict[str, str]) -> RosterEntry:
    sid = row.get("student_id", "")
    if not sid or len(sid) > MAX_ID_LENGTH:
        raise RosterError(f"{path}:{line}: student_id must have 1–{MAX_ID_LENGTH} characters")
    attempts = tuple(a.strip() for a in row.get(ATTEMPTS_COLUMN, "").split(ATTEMPT_SEPARATOR) if a.strip())
    if len(set(attempts)) != len(attempts):
        raise RosterError(f"{path}:{line}: {sid!r} lists the same attempt folder twice")
    for folder in attempts:
        if folder in seen_folders and seen_folders[folder] != sid:
            raise RosterError(f"{path}:{line}: the folder {folder!r} is listed for {sid!r} and for "
                              f"{seen_folders[folder]!r}; a folder belongs to one student")
        seen_folders[folder] = sid
    fields = {k: row.get(k, "") for k in IDENTITY_FIELDS}
    return RosterEntry(student_id=sid, attempts=attempts, **fields)


def read_roster(path: Path | str) -> Roster:
    """Read a roster CSV (module docstring) into a :class:`Roster`.

    Args:
        path: the CSV file (UTF-8, with or without a byte-order mark).

    Returns:
        the roster, students in file order.

    Raises:
        RosterError: if the file is unreadable, has no ``student_id`` column, an empty,
            overlong or repeated id, or gives one folder to two students (the message gives the line).
    """
    path = Path(path)
    students: dict[str, RosterEntry] = {}
    seen_folders: dict[str, str] = {}
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            reader = csv.DictReader(fh)
            fields = [f.strip() for f in (reader.fieldnames or []) if f is not None]
            if "student_id" not in fields:
                raise RosterError(f"{path}: the roster needs a student_id column (found: {', '.join(fields) or 'no header'})")
            for line, raw in enumerate(reader, start=2):
                row = {k.strip(): (v or "").strip() for k, v in raw.items() if isinstance(k, str)}
                entry = _entry(path, line, row, seen_folders)
                if entry.student_id in students:
                    raise RosterError(f"{path}:{line}: student_id {entry.student_id!r} appears twice")
                students[entry.student_id] = entry
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise RosterError(f"{path}: cannot read the roster: {exc}") from None
    for folder, owner in seen_folders.items():
        if folder in students and folder != owner:
            raise RosterError(f"{path}: the folder {folder!r} is listed as an attempt of {owner!r}, "
                              f"but {folder!r} is a student of the roster")
    return Roster(path=str(path), students=students, has_attempts=ATTEMPTS_COLUMN in fields)
