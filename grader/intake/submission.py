"""One intake for every path that grades a submission.

``ppo-course grade``, ``grade-batch`` (its workers), the Gradescope runner and
nbgrader's autograde all read a submission through this module, so that the
same folder or zip gets the same verdict everywhere. The rules themselves
(limits, staging, symlinks, zip bombs, NUL bytes, tool folders, where the
modules are) live on the student's side, in ``ppo_course.submission_rules`` and
``ppo_course.submission_layout``,
so that the student's ``ppo-course submit`` applies literally the same ones;
this module adds what only the grader needs:

* :func:`submission_hash`: the content hash a batch resumes by;
* :func:`private_folder`: a batch's staging folders, 0700, so that no other
  user (a sandboxed child after its uid drop) reads a classmate's staged copy.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from ppo_course.submission_rules import Entry, SubmissionLimits, walk_lstat


def submission_hash(entry: Entry, limits: SubmissionLimits) -> str:
    """SHA-256 (hex) of a submission as found on disk, so that a rerun notices a changed submission.

    Content is hashed when the on-disk size is within ``limits.max_bytes``
    (a folder: every file's relative path and bytes, symlink targets as text;
    a zip: its bytes); an oversized submission is hashed by its listing
    (path, size, mtime) so that a 500 MB upload is never read.
    """
    h = hashlib.sha256()
    h.update(entry.kind.encode())
    h.update((entry.problem or "").encode())
    for source in entry.sources:
        h.update(b"\0source\0" + os.fsencode(source.name))
        try:
            st = os.lstat(source)
        except OSError as exc:
            h.update(f"unreadable:{exc}".encode())
            continue
        if stat.S_ISLNK(st.st_mode):
            h.update(b"link:" + os.fsencode(os.readlink(source)))
        elif stat.S_ISREG(st.st_mode):
            _hash_file(h, source, st, limits.max_bytes)
        elif stat.S_ISDIR(st.st_mode):
            listing = list(walk_lstat(source))
            total = sum(s.st_size for _, s in listing if stat.S_ISREG(s.st_mode))
            for rel, s in listing:
                h.update(b"\0" + rel + b"\0")
                if stat.S_ISLNK(s.st_mode):
                    h.update(b"link:" + os.readlink(os.path.join(os.fsencode(source), rel)))
                elif stat.S_ISREG(s.st_mode):
                    if total <= limits.max_bytes:
                        _hash_file(h, Path(os.fsdecode(os.path.join(os.fsencode(source), rel))), s, limits.max_bytes)
                    else:
                        h.update(f"{s.st_size}:{s.st_mtime_ns}".encode())
                else:
                    h.update(f"mode:{stat.S_IFMT(s.st_mode)}".encode())
    return h.hexdigest()


def _hash_file(h, path: Path, st: os.stat_result, max_bytes: int) -> None:
    if st.st_size > max_bytes:
        h.update(f"big:{st.st_size}:{st.st_mtime_ns}".encode())
        return
    try:
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    except OSError as exc:
        h.update(f"unreadable:{exc}".encode())


def private_folder(path: Path) -> Path:
    """Create the folder ``path`` (and any missing parent) with mode 0700; an existing one is set to 0700.

    A batch stages each student under ``OUT_DIR/.batch/staging/<id>``, one folder per student, made just
    before that student is dispatched: the folder and ``staging/`` itself readable by the grader's user
    only. The sandbox's children read their own submission before they drop to a uid of their own
    (``sandbox_child.isolate``) and then see a minimal root without the batch's folders; the modes
    are the second wall, for a machine where the kernel refuses the private mounts.

    Returns:
        ``path``.

    Raises:
        OSError: if the folder cannot be made or its mode set.
    """
    path = Path(path)
    missing = []
    probe = path
    while not probe.exists():
        missing.append(probe)
        probe = probe.parent
    for folder in reversed(missing):
        folder.mkdir(mode=0o700, exist_ok=True)
    os.chmod(path, 0o700)  # the umask could only narrow mkdir's mode; an existing folder is narrowed here
    return path
