"""The submission as the child holds it: its regular files read into memory, then written into the
child's private working folder (``isolate.confine`` steps 3 and 5).

Read before the mounts change (so no instructor path needs to stay visible), without following a
symlink (``O_NOFOLLOW``: root never follows a link to an instructor file), within the size limits.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass


@dataclass
class SubmissionFile:
    """One regular file of the submission, held in memory while the mounts change."""

    relpath: str
    data: bytes
    mode: int


def read_submission(root: str, max_bytes: int, max_files: int = 500) -> list[SubmissionFile]:
    """Read a submission folder's regular files (no symlink is followed).

    Args:
        root: the submission folder (module files at its root).
        max_bytes: total size allowed, in bytes.
        max_files: most files allowed.

    Raises:
        ValueError: if the folder is missing or exceeds the limits.
    """
    files: list[SubmissionFile] = []
    total = 0
    if not os.path.isdir(root):
        raise ValueError(f"submission folder {root!r} does not exist")
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = [d for d in dirnames if d not in ("__pycache__", ".git") and not os.path.islink(os.path.join(dirpath, d))]
        for name in filenames:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            if not stat.S_ISREG(st.st_mode):
                continue
            total += st.st_size
            if total > max_bytes or len(files) >= max_files:
                raise ValueError(f"submission exceeds {max_bytes} bytes or {max_files} files")
            # O_NOFOLLOW: a file swapped for a symlink after the lstat is refused, not followed.
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
            with os.fdopen(fd, "rb", closefd=True) as fh:
                data = fh.read(max_bytes + 1)
            files.append(SubmissionFile(os.path.relpath(path, root), data, 0o644))
    return files


def write_submission(files: list[SubmissionFile], dest: str, uid: int | None, gid: int | None) -> None:
    """Write the in-memory submission under ``dest`` (owned by the child's user)."""
    for f in files:
        path = os.path.join(dest, f.relpath)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as fh:
            fh.write(f.data)
        os.chmod(path, f.mode)
    if uid is not None:
        for dirpath, dirnames, filenames in os.walk(dest):
            os.chown(dirpath, uid, gid if gid is not None else uid)
            for name in filenames:
                os.chown(os.path.join(dirpath, name), uid, gid if gid is not None else uid)
