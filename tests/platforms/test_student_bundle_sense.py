"""Issue 13 items 6 and 8: the student bundle makes sense to someone holding only the bundle.

Every path and `ppo-course` command its student-facing files mention exists in the bundle; the stubs
do not tell students not to edit them; the README starts with its title; `./install.sh` installs it in
one command from a fresh copy.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from conftest import REPO, clean_env

# What a student reads: the guide, the install script, the package description, the stubs, the questions.
STUDENT_FILES = ("README.md", "install.sh", "pyproject.toml", "exercises/*.py", "quiz_bank/*.yaml")
# Folders/files that exist once the student has run what the guide says (install.sh makes .venv).
MADE_BY_THE_STUDENT = (".venv", "build/")  # install.sh makes (and then removes) build/
PATH = re.compile(r"(?<![\w./:\\-])((?:[A-Za-z_.][\w.-]*/)+[\w.-]*|[\w.-]+\.(?:md|py|toml|sh|yaml|cfg|ipynb))(?![\w/])")
COMMAND = re.compile(r"ppo-course((?: [a-z][a-z-]*){1,2})")


def _student_files(bundle: Path) -> list[Path]:
    return sorted({p for pattern in STUDENT_FILES for p in bundle.glob(pattern)})


# A word with slashes is a path when it names a file (an extension), a folder (a trailing slash) or starts at a
# folder of the bundle or the instructor's tree; "ppo/policy/clipfrac" (a stats key) or "p/q" (a ratio) are not.
ROOTS = ("docs/", "exercises/", "ppo_course/", "quiz_bank/", "tools/", "grader/", "solutions/", "tests/",
         "ppo_reference/", "examples/", "benchmarks/", ".venv/", "../", "./")
EXTENSION = re.compile(r"\.(md|py|toml|sh|yaml|cfg|ipynb|txt|json|csv|png)$")


def _mentioned_paths(text: str) -> set[str]:
    """Path-like words (see ROOTS); a URL's parts are skipped by the pattern's look-behind."""
    found = set()
    for match in PATH.finditer(text):
        token = match.group(1).rstrip(".")
        after = text[match.end():match.end() + 1]
        if token.endswith("/") and after not in ("", " ", "\n", "`", ")", ",", ";", ":", "'", '"'):
            continue  # "∂L_t/∂r": a formula, not a folder
        if "/" not in token or token.endswith("/") or token.startswith(ROOTS) or EXTENSION.search(token):
            if "/" in token or EXTENSION.search(token):
                found.add(token)
    return found


def _exists(bundle: Path, token: str, where: Path) -> bool:
    if token.startswith(MADE_BY_THE_STUDENT):
        return True
    candidates = [bundle / token, where.parent / token, bundle / "exercises" / token]
    return any(c.exists() for c in candidates)


def test_every_path_the_bundle_mentions_is_in_the_bundle(bundle: Path):
    missing = []
    for f in _student_files(bundle):
        for token in _mentioned_paths(f.read_text(encoding="utf-8")):
            if not _exists(bundle, token, f):
                missing.append(f"{f.relative_to(bundle)}: {token}")
    assert missing == []


def _student_commands() -> dict[str, set[str] | None]:
    """{sub-command: its verbs (None when it takes none)} of the bundle's CLI (ppo_course and quiz_bank only)."""
    import argparse

    from ppo_course import cli

    parser = cli.build_parser(cli.COMMANDS)  # the student's table alone: what the bundle's CLI has
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    out: dict[str, set[str] | None] = {}
    for name, p in sub.choices.items():
        assert cli.COMMANDS[name].split(".")[0] in ("ppo_course", "quiz_bank"), name
        verbs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        out[name] = set(verbs[0].choices) if verbs else None
    return out


def test_every_command_the_bundle_mentions_exists_in_the_bundle(bundle: Path):
    commands = _student_commands()
    assert set(commands) == {"check", "quiz", "plot", "submit", "train"}
    wrong = []
    for f in _student_files(bundle):
        for match in COMMAND.finditer(f.read_text(encoding="utf-8")):
            words = match.group(1).split()
            if words[0] not in commands:
                wrong.append(f"{f.relative_to(bundle)}: ppo-course {' '.join(words)}")
            elif commands[words[0]] is not None and len(words) > 1 and words[1] not in commands[words[0]]:
                wrong.append(f"{f.relative_to(bundle)}: ppo-course {' '.join(words)}")
    assert wrong == []


def test_the_path_scan_catches_a_missing_file(bundle: Path, tmp_path: Path):
    """The scan itself can fail: a stub pointing at docs/ARCHITECTURE.md (not in the bundle) is caught."""
    text = "API (fixed by docs/ARCHITECTURE.md; see ppo_course/public_tests/ and exercises/ex4_gae.py)"
    tokens = _mentioned_paths(text)
    assert {"docs/ARCHITECTURE.md", "ppo_course/public_tests/", "exercises/ex4_gae.py"} <= tokens
    assert not _exists(bundle, "docs/ARCHITECTURE.md", bundle / "exercises" / "ex5_rollout_buffer.py")
    assert _exists(bundle, "ppo_course/public_tests/", bundle / "README.md")


def test_stubs_invite_editing(bundle: Path):
    for stub in sorted((bundle / "exercises").glob("*.py")):
        head = "".join(stub.read_text(encoding="utf-8").splitlines(keepends=True)[:3]).lower()
        assert "do not edit" not in head and "generated" not in head, stub.name
        assert "write your code here" in head, stub.name


def test_readmes_start_with_their_title(bundle: Path):
    for readme in (bundle / "README.md", REPO / "README.md"):
        assert readme.read_text(encoding="utf-8").startswith("# "), readme
    assert "../shared" not in (REPO / "README.md").read_text(encoding="utf-8")  # not in a clone


@pytest.mark.slow
def test_install_sh_installs_a_fresh_copy_in_one_command(bundle: Path, tmp_path: Path):
    """`./install.sh` from a fresh copy of the bundle: the venv, the package, `ppo-course` on the stubs.

    Offline and fast: the venv is made beforehand (as install.sh would, but seeing the project venv's
    third-party packages through a .pth line, torch 2.13.0 included) and pip runs with --no-index. So
    this proves that the script runs end to end from the bundle alone (Python check, venv reuse, the
    torch step skipped when the right torch is there, the bundle's own package installed with its
    console script, `ppo-course check` working on the stubs); not that the CPU torch download works.
    """
    copy = tmp_path / "ppo-ch5-student"
    shutil.copytree(bundle, copy)
    venv = copy / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    purelib = subprocess.run([str(venv / "bin" / "python"), "-c",
                              "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True, env=clean_env()).stdout.strip()
    (Path(purelib) / "_project_third_party.pth").write_text(sysconfig.get_paths()["purelib"] + "\n",
                                                            encoding="utf-8")
    env = clean_env(PYTHON=sys.executable, PIP_ARGS="--no-index --no-build-isolation -q")
    run = subprocess.run(["sh", "install.sh"], cwd=copy, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "torch 2.13.0 is already installed" in run.stdout and "Installed." in run.stdout
    cli = venv / "bin" / "ppo-course"
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import ppo_course; print(ppo_course.__file__)"],
                           capture_output=True, text=True, check=True, cwd=tmp_path, env=clean_env()).stdout
    assert where.startswith(purelib), where  # the bundle's copy, installed; not the repository
    check = subprocess.run([str(cli), "check", "exercises", "-e", "ex1"], cwd=copy, env=clean_env(),
                           capture_output=True, text=True, timeout=300)
    assert check.returncode == 1 and "not implemented" in check.stdout, check.stdout + check.stderr
    again = subprocess.run(["sh", "install.sh"], cwd=copy, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stdout + again.stderr  # rerunning is harmless
