"""Helpers of the TA-feature tests (a module of its own: ``conftest`` is a name every test folder uses)."""

from __future__ import annotations

from pathlib import Path

BATCH_TESTS = Path(__file__).resolve().parents[1] / "batch"
ROOT = Path(__file__).resolve().parents[2]
STAND_IN = "stand_in_grader:grade_submission"  # tests/batch/stand_in_grader.py, on the workers' PYTHONPATH


def write_student(root: Path, student_id: str, modules: dict[str, str | bytes]) -> Path:
    """A folder submission ``root/student_id`` holding ``{file name: source}``."""
    folder = root / student_id
    folder.mkdir(parents=True)
    for name, source in modules.items():
        (folder / name).write_bytes(source if isinstance(source, bytes) else source.encode())
    return folder
