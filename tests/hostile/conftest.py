"""Fixtures of the hostile-submissions suite: the shared fork server, graded twins, guards.

The attack modules in ``attacks/`` and the twins in ``twins/`` are data for
the sandbox, never imported here (``collect_ignore``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
import torch

from grader.sandbox import ForkServerClient

collect_ignore = ["attacks", "twins", "canary"]

torch.set_num_threads(1)

from hostile_limits import SUITE_LIMITS  # noqa: E402,F401 - the suite's limits (one place)


@pytest.fixture(scope="session")
def fork_server() -> ForkServerClient:
    """The process-wide fork server that grade_submission uses in this process."""
    return ForkServerClient.shared()


@pytest.fixture(scope="session")
def twin_results(tmp_path_factory, fork_server):
    """``grade(attack)`` → the GradeResult of the attack's honest twin (graded once per twin)."""
    from grader.grade import grade_submission
    from hostile_helpers import write_twin_submission

    cache: dict = {}

    def grade(attack):
        key = (attack.twin.name, attack.target)
        if key not in cache:
            folder = write_twin_submission(tmp_path_factory.mktemp("twin") / "twin", attack)
            cache[key] = grade_submission(folder, exercises=[attack.target, attack.other], profile="fast",
                                          limits=SUITE_LIMITS)
        return cache[key]

    return grade


@pytest.fixture
def cohort_root():
    """A 755 folder under /srv (or /opt), removed afterwards: the sandbox's children read the cohort as
    another uid, and /tmp may be hidden from them."""
    base = next((d for d in ("/srv", "/opt") if os.path.isdir(d) and os.access(d, os.W_OK)), None)
    if base is None:
        pytest.skip("no writable /srv or /opt for a cohort outside /tmp")
    root = Path(tempfile.mkdtemp(prefix="ppo-hostile-", dir=base))
    os.chmod(root, 0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)

