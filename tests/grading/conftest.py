"""Fixtures of the grader's own tests: graded solutions and stubs (fast profile), shared per session.

Grading runs student modules in the sandbox, so one grading of all seven
exercises costs a few CPU seconds; it happens once per session and the tests
read the result.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[2]
SOLUTIONS = REPO / "solutions"
STUBS = REPO / "exercises"


@pytest.fixture(scope="session", autouse=True)
def _one_thread():
    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def graded_solutions():
    """GradeResult of solutions/ (all seven exercises, fast profile)."""
    from grader.grade import grade_submission

    return grade_submission(SOLUTIONS, profile="fast")


@pytest.fixture(scope="session")
def graded_stubs():
    """GradeResult of the exercises/ stubs (all seven exercises, fast profile)."""
    from grader.grade import grade_submission

    return grade_submission(STUBS, profile="fast")


@pytest.fixture
def submission_copy(tmp_path):
    """A fresh copy of solutions/ to break on purpose: returns its folder."""
    folder = tmp_path / "student"
    folder.mkdir()
    for f in SOLUTIONS.glob("ex*.py"):
        shutil.copy(f, folder / f.name)
    return folder
