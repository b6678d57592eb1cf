"""Fixtures of the batch tests: the stand-in grader on the workers' path, small cohorts."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

HERE = Path(__file__).parent
STAND_IN = "stand_in_grader:grade_submission"


@pytest.fixture
def stand_in(monkeypatch):
    """Batch workers grade with the stand-in (tests/batch/stand_in_grader.py) for this test; returns ``install``
    to switch to another stand-in ("module:function") mid-test."""
    import stand_in_grader

    stand_in_grader.install(STAND_IN, monkeypatch)
    return lambda spec: stand_in_grader.install(spec, monkeypatch)


@pytest.fixture(scope="module")
def stand_in_module():
    """:func:`stand_in` for a whole module (for module-scoped fixtures that grade)."""
    import stand_in_grader

    with pytest.MonkeyPatch.context() as mp:
        stand_in_grader.install(STAND_IN, mp)
        yield


@pytest.fixture(autouse=True, scope="session")
def _stand_in_on_path():
    """Workers are fresh processes: put this folder on their PYTHONPATH so they can import the stand-in.

    Session-scoped, so that module-scoped fixtures that grade see it too.
    """
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH", "")])))
        mp.setenv("OMP_NUM_THREADS", "1")
        yield


def write_student(root: Path, student_id: str, modules: dict[str, str | bytes]) -> Path:
    """A folder submission ``root/student_id`` holding ``{file name: source}``."""
    folder = root / student_id
    folder.mkdir(parents=True)
    for name, source in modules.items():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(source if isinstance(source, bytes) else source.encode())
    return folder
