"""The output folder of a batch: refused inside the submissions, locked while a batch writes, swept after a kill.

TA side. ``OUT_DIR/.batch/lock`` is an exclusive ``flock`` (released by the kernel even after
``kill -9``); the temporary files of a killed atomic write are swept under it; the staging and
scratch folders of a killed run are removed; the folder of a student no longer in the
submissions folder is set aside (``OUT_DIR/.batch/removed/``), said in a warning.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from grader.records.gradebook import RECORD, STATE_DIR


class BatchBusy(RuntimeError):
    """Another batch is writing to the same OUT_DIR right now."""


def lock_out_dir(state: Path):
    """An exclusive ``flock`` on ``state/lock`` (released by the kernel even after kill -9).

    Raises:
        BatchBusy: if another process holds it.
    """
    import fcntl

    fh = open(state / "lock", "w")
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fh.close()
        raise BatchBusy(f"another grade-batch is writing to {state.parent}; wait for it or use another --out")
    return fh


def sweep_stale_temporaries(out_dir: Path) -> None:
    """Remove what a batch killed mid-write (kill -9) left of ``atomic_write_text``'s temporary files.

    Only names of that writer's shape (``.<name>.<random>.tmp``) directly in ``out_dir`` or one
    student folder below; the final files were never touched (``os.replace`` is atomic). Called
    under the batch's lock, so no live writer owns them.
    """
    for pattern in (".*.tmp", "*/.*.tmp"):
        for tmp in out_dir.glob(pattern):
            if tmp.is_file() and not tmp.is_symlink():
                tmp.unlink(missing_ok=True)


def check_out_dir(submissions_dir: Path, out_dir: Path) -> None:
    """Refuse an output folder inside the submissions folder (or the same): the batch would write the class's
    results into the submissions (a student's folder, even) and read its own outputs as students next time.

    Raises:
        ValueError: with both paths.
    """
    subs, out = Path(submissions_dir).resolve(), Path(out_dir).resolve()
    if out == subs or subs in out.parents:
        raise ValueError(f"the output folder {out_dir} is inside the submissions folder {submissions_dir}; "
                         "give --out a folder outside it (e.g. next to it)")


def set_aside_removed(out_dir: Path, present: set[str]) -> list[str]:
    """Move ``OUT_DIR/<id>/`` of students no longer in the submissions folder to ``OUT_DIR/.batch/removed/<id>/``.

    Only folders the batch made (holding a ``batch.json``); a folder already set aside is replaced.
    A student who is back in the submissions folder gets their folder back first (records, published
    results: a resumed batch or a regrade finds them as they were). Returns the warning for the TA ([] when
    nothing moved).
    """
    removed = out_dir / STATE_DIR / "removed"
    if removed.is_dir():
        for sid in sorted(present):
            if (removed / sid).is_dir() and not (out_dir / sid).exists():
                os.replace(removed / sid, out_dir / sid)
    gone = sorted(p.name for p in out_dir.iterdir() if p.is_dir() and not p.is_symlink() and
                  not p.name.startswith(".") and p.name not in present and (p / RECORD).is_file())
    if not gone:
        return []
    removed.mkdir(parents=True, exist_ok=True)
    for sid in gone:
        shutil.rmtree(removed / sid, ignore_errors=True)
        os.replace(out_dir / sid, removed / sid)
    return [f"{len(gone)} student(s) no longer in the submissions folder left the gradebook; their folders moved "
            f"to {removed}: {', '.join(gone)}"]


def clean_scratch(state: Path) -> None:
    """Staging and scratch of a killed run are stale: start (and end) clean (``state``: ``OUT_DIR/.batch``)."""
    for scratch in ("staging", "work", "warm"):
        shutil.rmtree(state / scratch, ignore_errors=True)
