"""The public test subset (what students run with `ppo-course check`).

The tests themselves live in `ppo_course/public_tests/` so that the student
bundle (which ships `ppo_course` but never `grader`) carries them; the one
definition of that folder is `ppo_course.public_tests.PUBLIC_TESTS_DIR`, which the
instructor side imports. See README.md beside this file.
"""

from __future__ import annotations

from pathlib import Path


def public_tests_dir() -> Path:
    """The folder of the public test modules: `ppo_course.public_tests.PUBLIC_TESTS_DIR`."""
    from ppo_course.public_tests import PUBLIC_TESTS_DIR

    return PUBLIC_TESTS_DIR
