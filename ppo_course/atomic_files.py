"""The project's one atomic file writer: a reader sees the old file or the new one, never half of either.

Every file a TA, a student or another process reads while it may be rewritten
(results.json, feedback.md, gradebooks, records, the quiz's responses,
``check``'s child's report, the LTI registry and keys, a submission zip, the
Gradescope bundle) is written here: to a temporary file in the same folder,
flushed and fsynced, then ``os.replace``-d over the target (POSIX ``rename``
is atomic within a file system). Student side (standard library only), so
that the student bundle, which has no ``grader`` package, writes its files
the same way.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path


def _umask() -> int:
    """This process's umask, read without a window where another thread could see it changed."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    current = os.umask(0o022)
    os.umask(current)
    return current


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, *, mode: int | None = None, suffix: str = ".tmp") -> Iterator[Path]:
    """Yield a temporary path beside ``path``; when the block ends cleanly, fsync it and replace ``path`` by it.

    For writers that need a path rather than text (a zip file). The parent folder is created if
    needed. On any error (the block raising, a failed fsync or replace) the temporary file is
    removed and ``path`` keeps its previous content (or stays absent).

    Args:
        path: the file to write.
        mode: its permission bits (e.g. ``0o600`` for keys); default: the mode of the file it replaces,
            else what a plain ``open(path, "w")`` gives (0644 under the usual umask 022; ``tempfile``
            alone would leave 0600), so that every output of a run has the same permissions.
        suffix: the temporary file's suffix (``.zip`` where a reader checks the name); ``.tmp`` by default,
            the pattern ``grader.records.out_folder`` sweeps after a killed batch.

    Raises:
        OSError: from the file system (the target is then untouched).
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    if mode is None:
        try:
            mode = target.stat().st_mode & 0o777
        except OSError:
            mode = 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=suffix, dir=target.parent)
    try:
        os.fchmod(fd, mode)
        os.close(fd)
        yield Path(tmp)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_text(path: str | os.PathLike, text: str, *, mode: int | None = None) -> Path:
    """Write ``text`` (UTF-8, ``\\n`` line ends) to ``path`` atomically; returns ``path`` as a Path.

    Args:
        path: the file to write (its parent folder is created if needed).
        text: the whole new content.
        mode: permission bits (see :func:`atomic_path`; default: the replaced file's, else the umask's).

    Raises:
        OSError: from the file system; ``path`` then keeps its previous content (or stays absent).
    """
    with atomic_path(path, mode=mode) as tmp:
        with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
    return Path(path)
