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
