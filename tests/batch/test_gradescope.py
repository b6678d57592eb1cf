"""The Gradescope bundle, run as Gradescope would, in a temporary tree imitating /autograder.

setup.sh is not run (its pip installs need the network): the current venv
plays the image's Python (AUTOGRADER_PYTHON), and AUTOGRADER_ROOT moves the
tree. The real hidden graders grade a submission with ex1 solved, ex2 with
chen's max-instead-of-min mistake, and nothing else.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from grader.commands.gradescope_bundle import build_bundle

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    return build_bundle(tmp_path_factory.mktemp("bundle") / "autograder.zip", profile="fast",
                        hidden_visibility="after_due_date")


def test_bundle_layout(bundle):
    with zipfile.ZipFile(bundle) as zf:
        names = set(zf.namelist())
        modes = {i.filename: i.external_attr >> 16 for i in zf.infolist()}
    # Gradescope's specification: both scripts at the zip's root, run_autograder executable.
    assert {"setup.sh", "run_autograder", "gradescope_config.json", "pyproject.toml"} <= names
    assert modes["run_autograder"] & stat.S_IXUSR and modes["setup.sh"] & stat.S_IXUSR
    assert "grader/batch.py" in names and "ppo_reference/__init__.py" in names
    assert any(n.startswith("grader/hidden/") for n in names)
    # Never solutions, tests or caches.
    assert not any(n.startswith(("solutions/", "tests/", "examples/")) or "__pycache__" in n for n in names)


@pytest.mark.slow
def test_run_autograder_in_an_imitation_tree(bundle, tmp_path):
    root = tmp_path / "autograder"
    source = root / "source"
    source.mkdir(parents=True)
    with zipfile.ZipFile(bundle) as zf:
        zf.extractall(source)
    # What Gradescope's image build does: copy run_autograder to /autograder.
    shutil.copy(source / "run_autograder", root / "run_autograder")
    os.chmod(root / "run_autograder", 0o755)
    submission = root / "submission"
    submission.mkdir()
    shutil.copy(ROOT / "examples" / "cohort" / "submissions" / "ada" / "ex1_ratio.py", submission)
    shutil.copy(ROOT / "examples" / "cohort" / "submissions" / "chen" / "ex2_clipped_loss.py", submission)
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "AUTOGRADER_PYTHON": sys.executable}
    proc = subprocess.run([str(root / "run_autograder")], cwd=root, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    results = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    assert results["stdout_visibility"] == "hidden"
    hidden = [t for t in results["tests"] if "hidden" in t["tags"]]
    assert hidden and {t["visibility"] for t in hidden} == {"after_due_date"}
    exercises = results["extra_data"]["exercises"]
    assert exercises["ex1_ratio"]["score"] == exercises["ex1_ratio"]["max_score"] > 0
    assert 0 < exercises["ex2_clipped_loss"]["score"] < exercises["ex2_clipped_loss"]["max_score"]
    assert exercises["ex4_gae"]["score"] == 0  # not handed in
    assert results["score"] == pytest.approx(sum(t["score"] for t in results["tests"]))
    assert any("diagnosis:max_instead_of_min" in t["tags"] for t in results["tests"])
    assert results["extra_data"]["batch_status"] == "graded"
