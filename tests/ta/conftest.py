"""Fixtures of the TA-feature tests: the batch tests' stand-in grader on the workers' path."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from ta_support import BATCH_TESTS

sys.path.insert(0, str(BATCH_TESTS))  # stand_in_v2 imports stand_in_grader in-process too


@pytest.fixture(autouse=True, scope="session")
def _stand_in_on_path():
    """Batch workers are fresh processes: they find the stand-in graders (tests/batch, tests/ta) on PYTHONPATH."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(BATCH_TESTS), str(Path(__file__).parent),
                                                               os.environ.get("PYTHONPATH", "")])))
        mp.setenv("OMP_NUM_THREADS", "1")
        yield


@pytest.fixture
def stand_in(monkeypatch):
    """Batch workers grade with tests/batch/stand_in_grader.py for this test; returns the installer of another
    stand-in ("module:function", e.g. ``stand_in_v2:grade_submission``), undone when the test ends."""
    import stand_in_grader

    stand_in_grader.install(stand_in_grader.STAND_IN, monkeypatch)
    return lambda spec: stand_in_grader.install(spec, monkeypatch)


@pytest.fixture(scope="module")
def stand_in_module():
    """:func:`stand_in` for module-scoped fixtures that grade."""
    import stand_in_grader

    with pytest.MonkeyPatch.context() as mp:
        stand_in_grader.install(stand_in_grader.STAND_IN, mp)
        yield lambda spec: stand_in_grader.install(spec, mp)
