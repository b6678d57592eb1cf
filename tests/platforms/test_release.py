"""`ppo-course release OUT_DIR`: the student bundle holds what students need and nothing of the instructor's."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from conftest import REPO, clean_env
from leak_scan import scan

STEMS = ("ex1_ratio", "ex2_clipped_loss", "ex3_full_loss", "ex4_gae", "ex5_rollout_buffer",
         "ex6_kl_reward", "ex7_ppo_step")  # the contract's module table


def test_bundle_layout(bundle: Path):
    """The bundle holds the stubs, the public package, the key-less bank and a student pyproject, nothing else."""
    top = {p.name for p in bundle.iterdir()}
    assert top == {"exercises", "ppo_course", "quiz_bank", "pyproject.toml", "README.md", "install.sh",
                   ".ppo-course-release"}
    assert sorted(p.stem for p in (bundle / "exercises").glob("*.py")) == sorted(STEMS)
    for stem in STEMS:
        stub = (bundle / "exercises" / f"{stem}.py").read_text(encoding="utf-8")
        assert "raise NotImplementedError(" in stub, stem
    assert (bundle / "ppo_course" / "public_tests" / "test_ex1_ratio.py").is_file()
    assert sorted(p.name for p in (bundle / "quiz_bank").glob("stop*.yaml")) == [f"stop{i}.yaml" for i in range(1, 9)]
    pyproject = (bundle / "pyproject.toml").read_text(encoding="utf-8")
    assert 'include = ["ppo_course*", "quiz_bank*"]' in pyproject
    assert "ppo_reference" not in pyproject.split("[tool.setuptools.packages.find]")[1].split("\n[")[0].replace(
        "# Only the public side", "")


def test_bundle_leaks_nothing(bundle: Path):
    """No solution body, hidden test, reference code, expected value or answer key anywhere in the bundle."""
    assert scan(bundle, REPO) == []


@pytest.mark.parametrize("plant", ["solution", "reference", "hidden_test", "quiz_key", "data_file"])
def test_scan_finds_planted_leaks(bundle: Path, tmp_path: Path, plant: str):
    """The scan is not vacuous: each kind of leak planted in a copy of the bundle is reported."""
    copy = tmp_path / "bundle"
    shutil.copytree(bundle, copy)
    if plant == "solution":  # a student-looking file holding the solved module (markers stripped)
        text = (REPO / "solutions" / "ex4_gae.py").read_text(encoding="utf-8")
        text = "\n".join(line for line in text.splitlines() if "### " not in line)
        (copy / "exercises" / "ex4_gae.py").write_text(text, encoding="utf-8")
    elif plant == "reference":  # reference code under an innocent name
        shutil.copyfile(REPO / "ppo_reference" / "gae.py", copy / "ppo_course" / "helpers.py")
    elif plant == "hidden_test":
        shutil.copyfile(REPO / "grader" / "hidden" / "test_ex1_ratio.py", copy / "ppo_course" / "extra_checks.py")
    elif plant == "quiz_key":
        shutil.copyfile(REPO / "quiz_bank" / "stop2.yaml", copy / "quiz_bank" / "stop2.yaml")
    elif plant == "data_file":
        (copy / "ppo_course" / "expected.json").write_text("{}", encoding="utf-8")
    assert scan(copy, REPO), f"a planted {plant} leak went unnoticed"


def test_release_refuses_a_folder_it_did_not_write(tmp_path: Path):
    """A non-empty folder without the marker is never overwritten, even with --force (exit 2, message)."""
    target = tmp_path / "home"
    target.mkdir()
    (target / "thesis.tex").write_text("precious", encoding="utf-8")
    for extra in ([], ["--force"]):
        proc = subprocess.run([sys.executable, "-m", "ppo_course.cli", "release", str(target), *extra],
                              capture_output=True, text=True, cwd=tmp_path, env=clean_env(), timeout=120)
        assert proc.returncode == 2, proc.stderr
        assert str(target) in proc.stderr
    assert (target / "thesis.tex").read_text(encoding="utf-8") == "precious"


@pytest.mark.parametrize("inside", [".", "ppo_course", "grader/hidden"])
def test_release_refuses_the_source_tree(inside: str):
    """The repository root or a folder of one of its packages is never a target (exit 2 through ReleaseError)."""
    from grader.release import ReleaseError, build_release

    with pytest.raises(ReleaseError, match="source tree"):
        build_release(REPO / inside / "bundle" if inside != "." else REPO, force=True)


def test_release_force_replaces_its_own_bundle(tmp_path: Path):
    """--force replaces a bundle written earlier (the marker is there), dropping stale files."""
    from grader.release import build_release

    out = tmp_path / "b"
    build_release(out)
    (out / "exercises" / "stale.py").write_text("x = 1\n", encoding="utf-8")
    build_release(out, force=True)
    assert not (out / "exercises" / "stale.py").exists()
    assert (out / "exercises" / "ex1_ratio.py").is_file()


def _student_venv(root: Path) -> Path:
    """A fresh venv that sees the project venv's third-party packages (torch...) but not its editable install.

    The project venv's site-packages is added by a plain path line in a .pth file:
    Python does not process the .pth files inside a folder added that way, so the
    editable finder that exposes ppo_reference/grader never runs here.
    """
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    purelib = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True, env=clean_env()).stdout.strip()
    (Path(purelib) / "_project_third_party.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    return venv


@pytest.mark.slow
def test_bundle_installs_and_runs_for_a_student(bundle: Path, tmp_path: Path):
    """pip install the bundle in a fresh venv; from outside the repo only the public side imports;
    `ppo-course check` reports every stub as not implemented; `quiz take --stop 1` runs from stdin."""
    venv = _student_venv(tmp_path)
    py, cli = venv / "bin" / "python", venv / "bin" / "ppo-course"
    # No network: every dependency is already visible through the project venv.
    subprocess.run([str(py), "-m", "pip", "install", "--no-index", "--no-deps", "--no-build-isolation", "-q", str(bundle)],
                   check=True, cwd=tmp_path, env=clean_env(), timeout=300, capture_output=True)
    work = tmp_path / "work"
    shutil.copytree(bundle / "exercises", work / "exercises")
    env = clean_env(PPO_COURSE_QUIZ_STORE=str(tmp_path / "quiz.sqlite3"), PPO_COURSE_STUDENT="alice")

    probe = ("import importlib.util as u, json; print(json.dumps({m: u.find_spec(m) is not None for m in "
             "['ppo_reference', 'grader', 'solutions', 'quiz_bank.keys', 'ppo_course', 'quiz_bank', 'torch']}))")
    found = json.loads(subprocess.run([str(py), "-c", probe], capture_output=True, text=True, check=True,
                                      cwd=work, env=env).stdout)
    assert found == {"ppo_reference": False, "grader": False, "solutions": False, "quiz_bank.keys": False,
                     "ppo_course": True, "quiz_bank": True, "torch": True}

    helped = subprocess.run([str(cli), "--help"], capture_output=True, text=True, cwd=work, env=env, timeout=120)
    assert helped.returncode == 0, helped.stderr[-2000:]
    # argparse lists each sub-command at a 4-space indent: only the student commands may be there.
    listed = set(re.findall(r"^ {4}([a-z][a-z-]*)\b", helped.stdout, flags=re.MULTILINE))
    assert listed == {"check", "quiz", "plot"}, listed
    # An instructor command is answered with a sentence (exit 2), not argparse's "invalid choice" or a traceback.
    grade = subprocess.run([str(cli), "grade", "exercises", "--out", "r.json"], capture_output=True, text=True,
                           cwd=work, env=env, timeout=120)
    assert grade.returncode == 2 and "is not a command of this install" in grade.stderr, grade.stderr[-2000:]

    check = subprocess.run([str(cli), "check", "exercises"], capture_output=True, text=True, cwd=work, env=env,
                           timeout=600)
    out = check.stdout + check.stderr
    assert "Traceback" not in out, out
    for stem in STEMS:
        assert stem in out, f"`ppo-course check` says nothing about {stem}:\n{out}"
    assert out.lower().count("not implemented") >= len(STEMS), out

    take = subprocess.run([str(cli), "quiz", "take", "--stop", "1", "--out", str(work / "responses.json")],
                          input="a\n" * 40, capture_output=True, text=True, cwd=work, env=env, timeout=300)
    assert take.returncode in (0, 1), take.stdout + take.stderr  # 1: the stop was not passed (no keys to tell)
    assert "Traceback" not in take.stdout + take.stderr
    responses = json.loads((work / "responses.json").read_text(encoding="utf-8"))
    assert responses["student_id"] == "alice"
    assert responses["answers"] and all(qid.startswith("stop1.") for qid in responses["answers"])
