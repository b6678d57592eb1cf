"""A submission given as a path: its :class:`Entry`, a temporary staged copy, and where its modules are.

The rules themselves (limits, staging, notes) are ``ppo_course.submission_rules``'s; this module
applies them to a path, for ``ppo-course submit`` (the student's machine) and the grader's intake
(``grader/intake/submission.py``) alike:

* :func:`entry_for`: the :class:`Entry` of a folder or a ``.zip``;
* :func:`staged`: a staged copy in a fresh temporary folder, removed afterwards;
* :func:`locate_modules`: the one folder holding the exercise modules, at any
  depth, or :class:`Rejected` when two folders both hold some;
* :func:`near_misses`: the files named like a missing module (``ex4_gae.txt``), for its message.

Student side: imports nothing from ``grader``; the student bundle ships it.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ppo_course.submission_rules import (JUNK_NAMES, Entry, Rejected, StagedSubmission, SubmissionLimits,
                                         is_tool_folder, stage_submission)
from ppo_course.submission_names import shown
from ppo_course.syllabus import EXERCISES


def entry_for(path: Path) -> Entry:
    """The :class:`Entry` of a submission given as a path (a folder or a ``.zip``); problems are kept, not raised."""
    path = Path(path)
    name = path.name[: -len(".zip")] if path.name.lower().endswith(".zip") else path.name
    if path.is_symlink():
        return Entry(name, [path], "dir", f"'{path.name}' is a symbolic link; submit the folder or zip itself")
    if path.is_dir():
        return Entry(name, [path], "dir")
    if path.is_file() and path.suffix.lower() == ".zip":
        return Entry(name, [path], "zip")
    if not path.exists():
        return Entry(name, [path], "dir", f"{path} does not exist")
    return Entry(name, [path], "dir", f"{path.name} is neither a folder nor a .zip file")


@contextlib.contextmanager
def staged(path: Path, limits: SubmissionLimits | None = None) -> Iterator[StagedSubmission]:
    """Stage the submission at ``path`` (folder or zip) into a fresh temporary folder, removed afterwards.

    Raises:
        Rejected: as :func:`stage_submission`.
    """
    limits = limits or SubmissionLimits()
    tmp = Path(tempfile.mkdtemp(prefix="ppo-intake-"))
    try:
        yield stage_submission(entry_for(Path(path)), tmp / "submission", limits)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@dataclass
class ModuleLocation:
    """Where the exercise modules are: ``root`` (a folder) and ``where`` (its path in the submission, for the student)."""

    root: Path
    where: str


def locate_modules(folder: Path, stems: Iterable[str] = EXERCISES) -> ModuleLocation:
    """The one folder of a staged submission that holds exercise modules (``<stem>.py``), at any depth.

    A submission holding no exercise module gives ``folder`` itself (graded
    as missing modules, with that message). Junk folders (``__MACOSX``,
    ``.ipynb_checkpoints``, hidden folders) never count.

    Raises:
        Rejected: when two or more folders hold exercise modules (ambiguous:
            which copy is the submission?), naming them.
    """
    folder = Path(folder)
    names = {f"{s}.py" for s in stems}
    holders: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in JUNK_NAMES and not d.startswith(".") and not is_tool_folder(d))
        if names & set(filenames):
            holders.append(Path(dirpath))
    if not holders:
        return ModuleLocation(folder, ".")
    if len(holders) > 1:
        shown = ", ".join(f"'{h.relative_to(folder).as_posix() or '.'}/'" for h in holders[:5])
        raise Rejected(f"exercise modules were found in {len(holders)} different folders ({shown}), so it is not "
                       "clear which ones to grade; submit one folder (or zip) holding ex1_ratio.py ... "
                       "ex7_ppo_step.py once")
    where = holders[0].relative_to(folder).as_posix() or "."
    return ModuleLocation(holders[0], where)


#: What may follow a module's stem in a near miss: another suffix (``.txt``, ``.ipynb``, ``.py.txt``) or a
#: copy's number (``ex4_gae (1).py``, ``ex4_gae_2.py``); ``ex4_gae_helpers.py`` is a helper, not a near miss.
_NEAR_MISS_REST = re.compile(r"(\..*|_*\(?\d+\)?(\.py)?)?")


def near_misses(folder: Path, stem: str, limit: int = 3) -> list[str]:
    """Files of ``folder`` named like ``<stem>.py`` but not it: ``ex4_gae.txt``, ``ex4_gae.ipynb``,
    ``Ex4_GAE.py``, ``ex4-gae (1).py``.

    Names are compared case-folded, with ``-`` and spaces read as ``_``. Returns at most ``limit`` names,
    sorted, each shown escaped (``submission_names.shown``) and cut to 80 characters; [] when the folder
    cannot be listed.
    """
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    key, found = stem.casefold(), []
    for name in names:
        norm = name.casefold().replace("-", "_").replace(" ", "_")
        if (name != f"{stem}.py" and norm.startswith(key) and _NEAR_MISS_REST.fullmatch(norm[len(key):])
                and os.path.isfile(os.path.join(folder, name))):
            found.append(shown(name)[:80])
    return found[:limit]
