"""The public test subset (what students run with `ppo-course check`).

The tests themselves live in `ppo_course/public_tests/` so that the student
bundle (which ships `ppo_course` but never `grader`) carries them; this
package only names that folder for the instructor side (`grade`, the release
and the Gradescope bundle). See README.md beside this file.
"""

from __future__ import annotations

from pathlib import Path


def public_tests_dir() -> Path:
    """The folder of the public test modules (`test_<module stem>.py`, one per exercise)."""
    import ppo_course

    return Path(ppo_course.__file__).resolve().parent / "public_tests"


PUBLIC_TESTS_DIR = public_tests_dir()
