"""The rules a submission must meet, on the student's side and the grader's alike.

``ppo-course submit`` (the student's own machine) and the grader's intake
(``grader/intake/submission.py``: ``grade``, ``grade-batch``, Gradescope, nbgrader) apply
these very functions, so a submission ``submit`` accepts is one the grader
accepts, with the same notes:

* :class:`SubmissionLimits`: the one set of limits (size, files, zip ratio,
  wall clock);
* :func:`stage_submission`: check a folder or a zip *before* anything is
  unpacked (sizes from ``lstat`` or the zip's headers, path traversal,
  symlinks, zip bombs, non-UTF-8 names, NUL bytes) and copy what is acceptable
  into a clean folder; a bad submission raises :class:`Rejected`;
* tool folders (:func:`is_tool_folder`: ``.venv``, ``venv``, ``build``,
  ``*.egg-info``, any folder holding a ``pyvenv.cfg``) are skipped with a note,
  never rejected: the bundle folder zipped after ``./install.sh`` holds a
  ``.venv`` full of symlinks, and it is not the student's work;
* :func:`already_staged`: a folder staged before, graded where it is (a batch
  stages once, in the parent).

A submission given as a path (its :class:`Entry`, a temporary staged copy, where
its modules are) is ``ppo_course.submission_layout``'s.

Student side: imports nothing from ``grader``; the student bundle ships it.
"""

from __future__ import annotations

import os
import shutil
import stat
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ppo_course import submission_names
from ppo_course.submission_names import collision, hidden_characters, unreadable_note
from ppo_course.text_safety import cap

# Files and folders that carry no student work: never staged (silently: every editor and OS leaves them).
JUNK_NAMES = frozenset({"__pycache__", "__MACOSX", ".DS_Store", ".git", ".ipynb_checkpoints"})
#: Folders that tools write (a virtual environment, a pip build): skipped with a note (see ``is_tool_folder``).
TOOL_FOLDER_NAMES = frozenset({".venv", "venv", "build"})
#: A folder holding this file is a virtual environment, whatever its name (``python -m venv env``).
VENV_MARKER = "pyvenv.cfg"


def is_tool_folder(name: str, holds_venv_marker: bool = False) -> bool:
    """Whether a folder called ``name`` is tool output, skipped with a note rather than staged.

    Tool folders: ``.venv``, ``venv``, ``build``, ``*.egg-info`` and any folder holding ``pyvenv.cfg``
    (``holds_venv_marker``). The bundle folder after ``./install.sh`` holds ``.venv`` (27,000 files and
    symlinks to the system's Python) and ``build/``; neither is the student's work.
    """
    return name in TOOL_FOLDER_NAMES or name.endswith(".egg-info") or holds_venv_marker


def tool_folder_note(rel: str) -> str:
    """The note for a skipped tool folder (``rel``: its path in the submission, '/'-separated)."""
    return f"skipped the folder '{submission_names.shown(rel)}/': tool output (a virtual environment or a build), not your work"


class SubmissionLimits(BaseModel):
    """What one submission may be, on every path (``grade``, ``grade-batch``, Gradescope, nbgrader).

    Checked before anything is unpacked or run. Every limit is per submission;
    sizes are bytes of *unpacked* content. ``timeout_s`` is the submission's
    one absolute wall-clock limit: a batch worker is killed at it, and the
    sandboxed calls of ``grade_submission`` (callbacks to the grader
    included) stop at it.
    """

    model_config = ConfigDict(frozen=True)

    max_bytes: int = Field(20_000_000, gt=0, description="total unpacked size, bytes (20 MB)")
    max_files: int = Field(500, gt=0, description="number of files in the submission")
    max_zip_ratio: float = Field(
        100.0, gt=1, description="uncompressed/compressed size above which a zip entry is a bomb"
    )
    timeout_s: float = Field(600.0, gt=0, description="hard wall-clock limit for grading one submission, seconds")


class Rejected(Exception):
    """A submission that cannot be graded; ``str(exc)`` is the reason for the TA and student.

    The reason quotes the submission's own names (a zip entry's name may be 64 KiB), so it is
    capped where it is made (``ppo_course.text_safety.cap``), before any writer sees it.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(cap(reason))


@dataclass
class Entry:
    """One submission: a folder or a zip (for a batch, one student found in SUBMISSIONS_DIR).

    ``sources`` are the paths that produced this id (two for a duplicate);
    ``problem`` is set when the entry is rejected at discovery already.
    """

    student_id: str
    sources: list[Path]
    kind: Literal["dir", "zip"]
    problem: str | None = None


@dataclass
class StagedSubmission:
    """The checked copy of one submission (what the sandbox reads)."""

    root: Path
    notes: list[str] = field(default_factory=list)  # told to the TA and the student
    n_python_files: int = 0


def display_name(raw: bytes) -> tuple[str, bool]:
    """(printable name, was it valid UTF-8) for a raw file name; bad bytes become ``\\xNN``."""
    try:
        return raw.decode("utf-8"), True
    except UnicodeDecodeError:
        return raw.decode("utf-8", "backslashreplace"), False


def walk_lstat(root: Path, tool_folders: list[str] | None = None) -> Iterable[tuple[bytes, os.stat_result]]:
    """(relative path as bytes, lstat) for everything under ``root``, sorted, never following links.

    Junk folders, tool folders (``is_tool_folder``) and symlinked folders are not entered; the relative
    paths of the tool folders left out are appended to ``tool_folders`` when given.
    """
    root_b = os.fsencode(root)
    for dirpath, dirnames, filenames in os.walk(root_b, followlinks=False):
        dirnames.sort()
        kept = []
        for d in dirnames:
            full = os.path.join(dirpath, d)
            name = d.decode("utf-8", "replace")
            if os.path.islink(full) or name in JUNK_NAMES:
                continue
            if is_tool_folder(name, os.path.isfile(os.path.join(full, os.fsencode(VENV_MARKER)))):
                if tool_folders is not None:
                    tool_folders.append(display_name(os.path.relpath(full, root_b))[0].replace(os.sep, "/"))
                continue
            kept.append(d)
        for name in sorted(filenames) + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            full = os.path.join(dirpath, name)
            yield os.path.relpath(full, root_b), os.lstat(full)
        dirnames[:] = kept


def stage_submission(entry: Entry, dest: Path, limits: SubmissionLimits) -> StagedSubmission:
    """Check a submission and copy its acceptable files into the empty folder ``dest``.

    Checks happen before any byte is extracted: the folder's ``lstat`` sizes
    or the zip's central-directory sizes against ``limits``. Files whose names
    are not UTF-8 and special files are dropped with a note; Python files that
    hold a NUL byte are kept (the import fails, that exercise scores 0) and
    noted.

    Returns:
        the staged submission (``dest``, notes, number of ``.py`` files).

    Raises:
        Rejected: with the reason, for a discovery problem (duplicate id...),
            an unreadable or encrypted zip, a submission over the size or file
            limits, a zip bomb, a path escaping the submission (``../``,
            absolute paths) or a symlink pointing outside it.
    """
    if entry.problem:
        raise Rejected(entry.problem)
    dest.mkdir(parents=True, exist_ok=True)
    source = entry.sources[0]
    staged = StagedSubmission(root=dest)
    if entry.kind == "zip":
        _stage_zip(source, dest, limits, staged)
    else:
        _stage_dir(source, dest, limits, staged)
    _note_python_files(staged)
    return staged


def _note_python_files(staged: StagedSubmission) -> None:
    """Count the staged ``.py`` files into ``staged`` and note each one holding a NUL byte (it cannot be imported)."""
    for path in sorted(staged.root.rglob("*.py")):
        if not path.is_file():  # a folder named `notes.py/` is no Python file
            continue
        staged.n_python_files += 1
        if b"\x00" in path.read_bytes():
            rel = path.relative_to(staged.root).as_posix()
            staged.notes.append(
                f"{rel} contains a NUL byte, so Python cannot import it: that exercise scores 0. "
                "Save the file again as plain UTF-8 text."
            )


def already_staged(root: Path) -> StagedSubmission:
    """The :class:`StagedSubmission` of a folder that :func:`stage_submission` wrote, read where it is (no copy).

    A batch stages each submission once, in the parent (``grader.student.grade_entry``); its
    worker grades that very folder. Restaging a staged copy would skip nothing and reject nothing (no
    link, special file, junk, tool folder or bad name is left in it, and it is within the limits), so
    the only notes it would give are the NUL-byte ones: this gives exactly those, and the count of
    ``.py`` files, from one walk of ``root``. Raises nothing for a missing folder (no files, no notes).
    """
    staged = StagedSubmission(root=Path(root))
    _note_python_files(staged)
    return staged


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def _stage_dir(source: Path, dest: Path, limits: SubmissionLimits, staged: StagedSubmission) -> None:
    root_real = os.path.realpath(source)
    plan: list[tuple[str, str]] = []  # (relative utf-8 name, path to read)
    total = 0
    tool_folders: list[str] = []
    for rel_b, st in walk_lstat(source, tool_folders):
        rel, ok = display_name(rel_b)
        full = os.path.join(os.fsencode(source), rel_b)
        if any(part in JUNK_NAMES for part in rel.split("/")):
            continue
        if stat.S_ISLNK(st.st_mode):
            target = os.path.realpath(full)
            if os.path.commonpath([root_real, os.fsdecode(target)]) != root_real:
                raise Rejected(
                    f"the symlink {rel!r} points outside the submission (to {os.fsdecode(os.readlink(full))!r}); "
                    "submit real files only"
                )
            if not os.path.isfile(target):
                staged.notes.append(f"skipped the symlink {rel!r}: it does not point to a file")
                continue
            st = os.stat(target)
            full = target
        elif not stat.S_ISREG(st.st_mode):
            staged.notes.append(f"skipped {rel!r}: not a regular file")
            continue
        if not ok:
            staged.notes.append(f"skipped the file {rel!r}: its name is not valid UTF-8; rename it")
            continue
        if hidden_characters(rel):  # a name a TA cannot read as it is
            staged.notes.append(unreadable_note(rel))
            continue
        total += st.st_size
        if total > limits.max_bytes:
            raise Rejected(
                f"the submission is larger than the limit of {_mb(limits.max_bytes)} "
                f"(over {_mb(total)} counted so far); remove data files, checkpoints and caches"
            )
        plan.append((rel, os.fsdecode(full)))
        if len(plan) > limits.max_files:
            raise Rejected(f"the submission holds more than {limits.max_files} files; submit the exercise modules only")
    staged.notes += [tool_folder_note(rel) for rel in tool_folders]
    if problem := collision(rel for rel, _ in plan):
        raise Rejected(f"the submission {problem}")
    for rel, src in plan:
        out = dest / rel
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, out)
        except OSError as exc:
            raise Rejected(f"the file {rel!r} cannot be read ({exc.strerror or exc}); fix its permissions")


def _zip_entry_name(info: zipfile.ZipInfo) -> str | None:
    """The entry's name as UTF-8, or None when it is not UTF-8.

    zipfile decodes names without the UTF-8 flag (bit 11) as cp437; such a name
    is re-encoded and accepted if its bytes are in fact UTF-8 (what most tools write).
    """
    if info.flag_bits & 0x800:
        return info.filename
    try:
        return info.filename.encode("cp437").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return None


def _zip_venv_folders(infos: list[zipfile.ZipInfo]) -> set[str]:
    """The folders of a zip that hold a ``pyvenv.cfg`` (virtual environments), as '/'-joined paths."""
    found = set()
    for info in infos:
        parts = (_zip_entry_name(info) or info.filename).replace("\\", "/").split("/")
        if parts[-1] == VENV_MARKER and len(parts) > 1:
            found.add("/".join(parts[:-1]))
    return found


def _zip_tool_folder(parts: list[str], venvs: set[str]) -> str | None:
    """The outermost tool folder (``is_tool_folder``) above a zip entry's path ``parts``, or None."""
    for i, part in enumerate(parts[:-1]):
        if part in JUNK_NAMES:
            return None  # junk is skipped silently below
        prefix = "/".join(parts[: i + 1])
        if is_tool_folder(part, prefix in venvs):
            return prefix
    return None


def _stage_zip(source: Path, dest: Path, limits: SubmissionLimits, staged: StagedSubmission) -> None:
    try:
        zf = zipfile.ZipFile(source)
    except UnicodeDecodeError:
        raise Rejected(f"{source.name} is flagged UTF-8 but holds file names that are not UTF-8; re-create the zip")
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        raise Rejected(f"{source.name} is not a readable zip archive ({exc}); re-create it with a standard zip tool")
    with zf:
        infos = zf.infolist()
        files: list[tuple[str, zipfile.ZipInfo]] = []
        declared = 0
        venvs = _zip_venv_folders(infos)
        tool_folders: dict[str, None] = {}
        for info in infos:
            name = _zip_entry_name(info)
            shown = name if name is not None else info.filename
            parts = shown.replace("\\", "/").split("/")
            if shown.startswith(("/", "\\")) or ".." in parts or (len(parts[0]) == 2 and parts[0][1] == ":"):
                raise Rejected(
                    f"{source.name} holds the path {shown!r}, which escapes the submission folder; "
                    "zip the files with relative paths only"
                )
            if name is not None and submission_names.overlong(parts):  # before NFC in `collision` looks at it
                raise Rejected(f"{source.name} cannot be unpacked: a name is over {submission_names.NAME_MAX} bytes")
            tool = _zip_tool_folder(parts, venvs)
            if tool is not None:
                tool_folders.setdefault(tool)
                continue
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode):
                raise Rejected(f"{source.name} holds a symbolic link ({shown!r}); submit real files only")
            if info.flag_bits & 0x1:
                raise Rejected(f"{source.name} is encrypted ({shown!r}); submit it without a password")
            if info.is_dir():
                continue
            if any(part in JUNK_NAMES for part in parts):
                continue
            if name is None:
                staged.notes.append(f"skipped the file {shown!r}: its name is not valid UTF-8; rename it")
                continue
            if hidden_characters(name):  # a name a TA cannot read as it is
                staged.notes.append(unreadable_note(name))
                continue
            declared += info.file_size
            if declared > limits.max_bytes:
                raise Rejected(
                    f"{source.name} unpacks to more than the limit of {_mb(limits.max_bytes)}; "
                    "remove data files, checkpoints and caches"
                )
            if info.file_size > 1_000_000 and info.file_size > limits.max_zip_ratio * max(info.compress_size, 1):
                raise Rejected(
                    f"{source.name} looks like a zip bomb: {shown!r} expands {info.file_size / max(info.compress_size, 1):.0f}-fold"
                )
            files.append((name, info))
            if len(files) > limits.max_files:
                raise Rejected(f"{source.name} holds more than {limits.max_files} files; submit the exercise modules only")
        staged.notes += [tool_folder_note(rel) for rel in tool_folders]
        if problem := collision(name for name, _ in files):
            raise Rejected(f"{source.name} {problem}")
        _extract(zf, files, dest, limits, source.name)

def _extract(zf: zipfile.ZipFile, files: list[tuple[str, zipfile.ZipInfo]], dest: Path, limits: SubmissionLimits,
             zip_name: str) -> None:
    """Unpack the checked ``files`` of ``zf`` into ``dest``; raises ``Rejected`` past the size limit or on a bad entry."""
    # Extract ourselves, counting real bytes: headers can lie about sizes.
    written = 0
    for name, info in files:
        out = dest / name
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, open(out, "wb") as dst:
                while chunk := src.read(1 << 16):
                    written += len(chunk)
                    if written > limits.max_bytes:
                        raise Rejected(
                            f"{zip_name} unpacks to more than the limit of {_mb(limits.max_bytes)} "
                            "(its headers understate the sizes)"
                        )
                    dst.write(chunk)
        except Rejected:
            raise
        except OSError as exc:  # a name too long, a file that is also a folder (`a.py` and `a.py/b`) ...
            # strerror only: the exception's text holds the grader's own staging path
            raise Rejected(f"{zip_name} holds {cap(name, 200)!r}, which cannot be unpacked "
                           f"({exc.strerror or type(exc).__name__}); re-create the zip with plain, short names")
        except (zipfile.BadZipFile, EOFError, ValueError, NotImplementedError) as exc:
            raise Rejected(f"{zip_name} is damaged: {name!r} cannot be read ({exc}); re-create the zip")
