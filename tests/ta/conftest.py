"""Fixtures of the TA-feature tests: the batch tests' stand-in grader on the workers' path."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

BATCH_TESTS = Path(__file__).resolve().parents[1] / "batch"
ROOT = Path(__file__).resolve().parents[2]
STAND_IN = "stand_in_grader:grade_submission"
sys.path.insert(0, str(BATCH_TESTS))


@pytest.fixture(autouse=True, scope="session")
def _stand_in_on_path():
    """Batch workers are fresh processes: they find the stand-in grader (tests/batch) on PYTHONPATH."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(BATCH_TESTS), str(Path(__file__).parent),
                                                               os.environ.get("PYTHONPATH", "")])))
        mp.setenv("OMP_NUM_THREADS", "1")
        yield


def write_student(root: Path, student_id: str, modules: dict[str, str | bytes]) -> Path:
    """A folder submission ``root/student_id`` holding ``{file name: source}``."""
    folder = root / student_id
    folder.mkdir(parents=True)
    for name, source in modules.items():
        (folder / name).write_bytes(source if isinstance(source, bytes) else source.encode())
    return folder
