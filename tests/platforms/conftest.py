"""Fixtures of the platform tests: the student bundle, built once per session, and a clean environment."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[2]
#: Steps of the one reference run the test bundle ships.
BUNDLE_STEPS = 3


@pytest.fixture(scope="session", autouse=True)
def _one_thread():
    """One torch thread: the machine's two cores are shared by everybody."""
    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def bundle(tmp_path_factory) -> Path:
    """The student bundle written by `grader.platforms.release.build_release` into a fresh folder.

    It ships one reference run, the default config's first ``BUNDLE_STEPS`` steps (the release ships 60 and
    more: ``grader.platforms.release.REFERENCE_RUNS``), computed into a fresh cache: the tests stay fast.
    """
    from grader.platforms.release import build_release

    out = tmp_path_factory.mktemp("release") / "bundle"
    build_release(out, reference_runs=(({}, BUNDLE_STEPS),), cache=tmp_path_factory.mktemp("reference-cache"))
    return out


def clean_env(**extra: str) -> dict[str, str]:
    """os.environ without anything that could put the repository on a child's sys.path."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "PYTHONSTARTUP")}
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", **extra)
    return env
