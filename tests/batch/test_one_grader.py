"""One grader per batch: the fingerprint a batch records is that of the grader its workers import (``python -I``).

Before, the parent fingerprinted the grader it imported itself: with a checkout on ``PYTHONPATH`` beside the
installed grader, regrade.md announced a grader change while the workers graded every student with the
installed one (old points), silently. Now the batch asks a worker and refuses to start when they differ.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _check(env_path: str | None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    if env_path:
        env["PYTHONPATH"] = env_path
    code = ("import grader, sys\n"
            "from grader.runners.workers import GraderMismatch, check_one_grader\n"
            "print('parent', grader.__file__)\n"
            "try:\n    print('ok', check_one_grader())\n"
            "except GraderMismatch as exc:\n    print('refused', exc)\n")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env,
                          cwd=ROOT.parent)


def test_a_checkout_on_pythonpath_beside_the_installed_grader_is_refused(tmp_path):
    other = tmp_path / "checkout"
    shutil.copytree(ROOT / "grader", other / "grader", ignore=shutil.ignore_patterns("__pycache__"))
    points = other / "grader" / "points.yaml"
    points.write_text(points.read_text() + "\n# a points change in the checkout only\n")
    proc = _check(str(other))
    assert str(other) in proc.stdout, proc.stdout + proc.stderr  # the parent imports the checkout
    assert "refused" in proc.stdout and "PYTHONPATH" in proc.stdout, proc.stdout + proc.stderr[-2000:]


def test_the_same_grader_passes_the_check():
    proc = _check(None)
    assert "ok " in proc.stdout, proc.stdout + proc.stderr[-2000:]
