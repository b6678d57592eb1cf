"""The whole suite's grader secret: a test-only one, made here, never shipped (``grader.course_secret``).

The graders never fall back to a built-in secret, so the suite names one before any test runs:
``$PPO_COURSE_SECRET_FILE`` points at a file in a folder of this session, and every process the tests
start (workers, the CLI, Dask workers) inherits it. Its value is the secret this repository committed
until the secret became per course: public since then, so no course's, and the draws the suite's
expectations were checked with (``tests/grading/test_course_secret.py`` grades with others too).
"""

from __future__ import annotations

import os
import shutil
import tempfile

#: The suite's secret (public; no course may use it: a course's is made by ``ppo-course secret init``).
TEST_SECRET = "fb21cee21ae397f0e27c6c132929269455f4c9ad7b2bc7ac24629bc3903b4835"

_FOLDER: str | None = None


def pytest_configure(config) -> None:
    """Write the test secret (0600, in a 0700 folder of this session) and point ``$PPO_COURSE_SECRET_FILE`` at it;
    point ``$PPO_COURSE_GRADER_CACHE_DIR`` into the same folder."""
    global _FOLDER
    from grader.course_secret import SECRET_ENV, SECRET_NAME, create_secret
    from grader.hidden.disk_cache import CACHE_DIR_ENV

    _FOLDER = tempfile.mkdtemp(prefix="ppo-course-test-secret-")
    # The graders' store on disk (grader.hidden.disk_cache) of this session: never the user's own.
    os.environ[CACHE_DIR_ENV] = os.path.join(_FOLDER, "grader-cache")
    if os.environ.get(SECRET_ENV) and os.environ.get("PPO_COURSE_TEST_KEEP_SECRET") == "1":
        return  # a run asked for the secret it named (e.g. to grade the catalogue with another one)
    path = create_secret(os.path.join(_FOLDER, SECRET_NAME), TEST_SECRET)
    os.environ[SECRET_ENV] = str(path)


def pytest_unconfigure(config) -> None:
    """Remove this session's secret folder (and the graders' store on disk in it)."""
    if _FOLDER is not None:
        shutil.rmtree(_FOLDER, ignore_errors=True)
