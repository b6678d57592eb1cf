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


def test_bundle_holds_no_grader_child_code(bundle: Path):
    """The grader's sandbox child (``sandbox_child/``: fork server, isolation, request loop) is not shipped;
    the student keeps only what ``check`` and ``train --mine`` run in-process (the exercise-7 harness and
    what it imports: tied_grad, observe, seeding)."""
    child_modules = {p.name for p in (REPO / "sandbox_child").glob("*.py") if p.name != "__init__.py"}
    assert len(child_modules) >= 15  # the package is where this test looks (not an empty glob)
    assert not (bundle / "sandbox_child").exists()
    assert sorted(p.name for p in bundle.rglob("*.py") if p.name in child_modules) == []
    assert sorted(p.name for p in (bundle / "ppo_course" / "sandbox").glob("*.py")) == [
        "__init__.py", "harness.py", "observe.py", "seeding.py", "tied_grad.py"]


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
    from grader.platforms.release import ReleaseError, build_release

    with pytest.raises(ReleaseError, match="source tree"):
        build_release(REPO / inside / "bundle" if inside != "." else REPO, force=True)


def test_release_force_replaces_its_own_bundle(tmp_path: Path):
    """--force replaces a bundle written earlier (the marker is there), dropping stale files."""
    from grader.platforms.release import build_release

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

    # find_spec of a submodule imports its parent package: a missing parent (quiz_bank.instructor) is "absent" too.
    probe = ("import importlib.util as u, json\n"
             "def there(m):\n"
             "    try:\n"
             "        return u.find_spec(m) is not None\n"
             "    except ModuleNotFoundError:\n"
             "        return False\n"
             "print(json.dumps({m: there(m) for m in ['ppo_reference', 'grader', 'solutions', 'quiz_bank.instructor',"
             " 'quiz_bank.instructor.keys', 'quiz_bank.keys', 'ppo_course', 'quiz_bank', 'torch']}))")
    found = json.loads(subprocess.run([str(py), "-c", probe], capture_output=True, text=True, check=True,
                                      cwd=work, env=env).stdout)
    assert found == {"ppo_reference": False, "grader": False, "solutions": False, "quiz_bank.instructor": False,
                     "quiz_bank.instructor.keys": False, "quiz_bank.keys": False,
                     "ppo_course": True, "quiz_bank": True, "torch": True}

    helped = subprocess.run([str(cli), "--help"], capture_output=True, text=True, cwd=work, env=env, timeout=120)
    assert helped.returncode == 0, helped.stderr[-2000:]
    # argparse lists each sub-command at a 4-space indent: only the student commands may be there.
    listed = set(re.findall(r"^ {4}([a-z][a-z-]*)\b", helped.stdout, flags=re.MULTILINE))
    assert listed == {"check", "quiz", "plot", "submit", "train"}, listed
    # An instructor command is answered with a sentence (exit 2), not argparse's "invalid choice" or a traceback.
    grade = subprocess.run([str(cli), "grade", "exercises", "--out", "r.json"], capture_output=True, text=True,
                           cwd=work, env=env, timeout=120)
    assert grade.returncode == 2 and "is not a command of this install" in grade.stderr, grade.stderr[-2000:]

    quiz_help = subprocess.run([str(cli), "quiz", "--help"], capture_output=True, text=True, cwd=work, env=env,
                               timeout=120)
    assert set(re.findall(r"^ {4}([a-z][a-z-]*)\b", quiz_help.stdout, flags=re.MULTILINE)) == {
        "take", "status", "validate"}, quiz_help.stdout
    submitted = subprocess.run([str(cli), "submit", "--out", str(tmp_path / "sub.zip")], capture_output=True,
                               text=True, cwd=work, env=env, timeout=120)
    assert submitted.returncode == 0 and "sha256" in submitted.stdout, submitted.stdout + submitted.stderr

    check = subprocess.run([str(cli), "check", "exercises"], capture_output=True, text=True, cwd=work, env=env,
                           timeout=600)
    out = check.stdout + check.stderr
    assert "Traceback" not in out, out
    for stem in STEMS:
        assert stem in out, f"`ppo-course check` says nothing about {stem}:\n{out}"
    assert out.lower().count("not implemented") >= len(STEMS), out

    take = subprocess.run([str(cli), "quiz", "take", "--stop", "1", "--out", str(work / "responses.json")],
                          input="a\n1\n" * 60, capture_output=True, text=True, cwd=work, env=env, timeout=300)
    # "a" answers a choice, "1" a number (each re-asked on the other kind's answer): every drawn question answered.
    assert take.returncode in (0, 1), take.stdout + take.stderr  # 1: the stop was not passed (no keys to tell)
    assert "Traceback" not in take.stdout + take.stderr
    responses = json.loads((work / "responses.json").read_text(encoding="utf-8"))
    assert responses["student_id"] == "alice"
    assert responses["answers"] and all(qid.startswith("stop1.") for qid in responses["answers"])


# -- install.sh: the configured pip index first, no build leftovers (issue 21 item 11) ------------------------

FAKE_PYTHON = """#!/bin/sh
# Stands in for the venv's python: logs each call; `-c` (the torch probe) fails; pip succeeds.
echo "$*" >> "$FAKE_LOG"
case "$1" in -c) exit 1 ;; esac
if [ "$1 $2 $3" = "-m pip config" ]; then printf '%s\\n' "${FAKE_PIP_CONFIG:-}"; exit 0; fi
if [ "$1 $2 $3" = "-m pip install" ]; then
    case "$*" in
        *torch==*--index-url*) exit 0 ;;
        *torch==*) [ -n "${FAKE_FAIL_TORCH:-}" ] && exit 1; exit 0 ;;
        *) mkdir -p build/lib ppo_course_student.egg-info; exit 0 ;;  # pip's in-tree build
    esac
fi
exit 0
"""


def _run_install(bundle: Path, tmp_path: Path, **env: str) -> tuple[list[str], Path]:
    """Run the bundle's install.sh against a stand-in venv; (the pip calls it made, the folder it ran in)."""
    work = tmp_path / "bundle"
    work.mkdir()
    shutil.copy(bundle / "install.sh", work / "install.sh")
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    for name, text in (("python", FAKE_PYTHON), ("ppo-course", "#!/bin/sh\nexit 0\n")):
        (venv / "bin" / name).write_text(text, encoding="utf-8")
        (venv / "bin" / name).chmod(0o755)
    log = tmp_path / "calls.log"
    base = {k: v for k, v in clean_env().items() if not k.startswith("PIP_")}
    proc = subprocess.run(["sh", str(work / "install.sh")], capture_output=True, text=True, timeout=120,
                          env={**base, "PYTHON": sys.executable, "VENV": str(venv), "FAKE_LOG": str(log), **env})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    calls = log.read_text(encoding="utf-8").splitlines()
    return [c for c in calls if c.startswith("-m pip install") and "torch==" in c], work


def test_install_uses_pytorch_cpu_index_when_no_index_is_configured(bundle: Path, tmp_path: Path):
    torch_calls, _ = _run_install(bundle, tmp_path)
    assert len(torch_calls) == 1 and "--index-url https://download.pytorch.org/whl/cpu" in torch_calls[0]


@pytest.mark.parametrize("how", [{"PIP_INDEX_URL": "http://mirror.local/simple"},
                                 {"FAKE_PIP_CONFIG": "global.index-url='http://mirror.local/simple'"},
                                 {"PIP_ARGS": "--no-index --find-links /wheels"}])
def test_install_asks_the_configured_index_first(bundle: Path, tmp_path: Path, how: dict):
    """A mirror-only network: torch comes from the configured index, download.pytorch.org is never asked."""
    torch_calls, _ = _run_install(bundle, tmp_path, **how)
    assert len(torch_calls) == 1, torch_calls
    assert "download.pytorch.org" not in torch_calls[0] and "--index-url" not in torch_calls[0]
    if "PIP_ARGS" in how:
        assert "--no-index --find-links /wheels" in torch_calls[0]


def test_install_falls_back_to_pytorch_index_when_the_mirror_lacks_torch(bundle: Path, tmp_path: Path):
    torch_calls, _ = _run_install(bundle, tmp_path, PIP_INDEX_URL="http://mirror.local/simple", FAKE_FAIL_TORCH="1")
    assert len(torch_calls) == 2
    assert "--index-url" not in torch_calls[0] and "download.pytorch.org/whl/cpu" in torch_calls[1]


def test_install_leaves_no_build_or_egg_info(bundle: Path, tmp_path: Path):
    _, work = _run_install(bundle, tmp_path)
    assert not (work / "build").exists() and not list(work.glob("*.egg-info"))


def test_bundle_readme_documents_the_install_settings(bundle: Path):
    readme = (bundle / "README.md").read_text(encoding="utf-8")
    for setting in ("PIP_ARGS", "VENV", "PIP_INDEX_URL", "TORCH_INDEX_URL"):
        assert setting in readme, setting
    assert "ppo-course submit" in readme


def test_student_quiz_help_lists_only_student_verbs(bundle: Path, tmp_path: Path):
    """Issue 21 item 14: where the keys are absent (the bundle's quiz_bank), `quiz --help` names no instructor verb."""
    env = clean_env(PYTHONPATH=str(bundle))
    code = ("import argparse, json, quiz_bank.commands as c; p = argparse.ArgumentParser(); c.add_arguments(p); "
            "sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction)); "
            "print(json.dumps([c.__file__, sorted(sub.choices), p.format_help()]))")
    where, verbs, text = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                                   check=True, cwd=tmp_path, env=env, timeout=120).stdout)
    assert Path(where).resolve().is_relative_to(bundle.resolve())
    assert verbs == ["status", "take", "validate"], verbs
    assert "instructor" not in text and "grade-batch" not in text
    # The instructor's own install keeps every verb.
    import argparse

    from quiz_bank import commands

    parser = argparse.ArgumentParser()
    commands.add_arguments(parser)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert {"key", "grade", "grade-batch", "export-public", "take"} <= set(sub.choices)
