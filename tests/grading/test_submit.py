"""Issue 21 item 8: `ppo-course submit` makes the submission the grader accepts, and the intake skips tool folders.

`submit` and the grader's intake apply one set of rules (`ppo_course/submission_rules.py`, imported by
`grader/intake/submission.py`); a bundle folder zipped after `./install.sh` (a `.venv` of symlinks, `build/`,
`*.egg-info`) is graded with a note instead of rejected.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import zipfile
from pathlib import Path

import pytest

from ppo_course.cli import main

REPO = Path(__file__).resolve().parents[2]
SOLUTIONS = REPO / "solutions"

pytestmark = pytest.mark.xdist_group("grader")

HELPER_USER = '''import torch

from mathbits.scale import twice  # a helper package two levels down
import ratio_helpers


def logprobs_from_logits(logits, tokens):  # with the docstring's Raises clauses, as a full-marks ex1 keeps them
    if logits.ndim != 3 or tokens.is_floating_point() or tokens.dtype == torch.bool \
            or tuple(tokens.shape) != tuple(logits.shape[:2]):
        raise ValueError("logits must be [B, T, V] and tokens integer ids of shape [B, T]")
    return ratio_helpers.gather_logprobs(logits, tokens)


def probability_ratio(logp_new, logp_old):
    if logp_new.shape != logp_old.shape:
        raise ValueError("logp_new and logp_old must have one shape")
    return twice(logp_new - logp_old).mul(0.5).exp()
'''


def _student(folder: Path) -> Path:
    """An exercises folder: ex1 using two helpers (one in a package), ex4 solved, junk beside them."""
    folder.mkdir(parents=True)
    (folder / "ex1_ratio.py").write_text(HELPER_USER, encoding="utf-8")
    (folder / "ratio_helpers.py").write_text(
        "import torch\n\n\ndef gather_logprobs(logits, tokens):\n"
        "    return torch.log_softmax(logits, -1).gather(-1, tokens.long().unsqueeze(-1)).squeeze(-1)\n",
        encoding="utf-8")
    (folder / "mathbits").mkdir()
    (folder / "mathbits" / "__init__.py").write_text("", encoding="utf-8")
    (folder / "mathbits" / "scale.py").write_text("def twice(x):\n    return 2 * x\n", encoding="utf-8")
    shutil.copy(SOLUTIONS / "ex4_gae.py", folder / "ex4_gae.py")
    (folder / "scratch.py").write_text("print('an experiment nobody imports')\n", encoding="utf-8")
    (folder / "data.bin").write_bytes(b"\0" * 1000)
    return folder


def test_submit_holds_the_modules_and_the_helpers_they_import_only(tmp_path, capsys):
    folder = _student(tmp_path / "work" / "exercises")
    out = tmp_path / "sub.zip"
    assert main(["submit", str(folder), "--out", str(out)]) == 0
    with zipfile.ZipFile(out) as zf:
        names = sorted(zf.namelist())
    assert names == ["ex1_ratio.py", "ex4_gae.py", "mathbits/__init__.py", "mathbits/scale.py", "ratio_helpers.py"]
    printed = capsys.readouterr().out
    # where, size and hash, computed here independently of the command
    digest = hashlib.sha256(out.read_bytes()).hexdigest()
    assert str(out) in printed and f"{out.stat().st_size:,} bytes" in printed and digest in printed
    assert "missing: ex2_clipped_loss" in printed
    # deterministic: the same files give the same zip, whatever their modification times
    os.utime(folder / "ex4_gae.py", (1_700_000_000, 1_700_000_000))
    again = tmp_path / "again.zip"
    assert main(["submit", str(folder), "--out", str(again)]) == 0
    assert again.read_bytes() == out.read_bytes()


def test_submit_then_grade_round_trip(tmp_path, capsys):
    """What `submit` writes, `grade` reads: the helpers travel with the module that imports them."""
    folder = _student(tmp_path / "exercises")
    sub = tmp_path / "submission.zip"
    assert main(["submit", str(folder), "--out", str(sub)]) == 0
    results = tmp_path / "results.json"
    assert main(["grade", str(sub), "--out", str(results), "--exercises", "ex1_ratio", "--profile", "fast",
                 "--quiet"]) == 0
    data = json.loads(results.read_text(encoding="utf-8"))
    assert data["extra_data"]["status"] == "graded"
    assert data["score"] == data["extra_data"]["max_score"] == 10, data["output"]


def test_submit_refuses_what_the_intake_refuses_and_writes_nothing(tmp_path, capsys):
    folder = tmp_path / "exercises"
    folder.mkdir()
    (folder / "ex1_ratio.py").write_text("import big\n", encoding="utf-8")
    (folder / "big.py").write_text("X = '" + "a" * 21_000_000 + "'\n", encoding="utf-8")  # over the 20 MB limit
    out = tmp_path / "sub.zip"
    assert main(["submit", str(folder), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "would reject" in err and "20.0 MB" in err
    assert not out.exists() and not list(tmp_path.glob(".submission-*"))


def test_submit_warns_about_a_syntax_error_and_a_nul_byte(tmp_path, capsys):
    folder = tmp_path / "exercises"
    folder.mkdir()
    (folder / "ex1_ratio.py").write_text("def probability_ratio(a, b:\n    return a\n", encoding="utf-8")
    (folder / "ex2_clipped_loss.py").write_bytes(b"x = 1\x00\n")
    assert main(["submit", str(folder), "--out", str(tmp_path / "s.zip")]) == 0
    captured = capsys.readouterr()
    assert "ex1_ratio.py: syntax error (line 1" in captured.err
    assert "ex2_clipped_loss.py: syntax error" in captured.err
    assert "ex2_clipped_loss.py contains a NUL byte" in captured.out  # the intake's own note


def test_submit_usage_errors(tmp_path, capsys):
    assert main(["submit", str(tmp_path / "nothere")]) == 2
    assert main(["submit", str(tmp_path), "--out", str(tmp_path / "s.tar")]) == 2
    assert main(["submit", str(tmp_path), "--out", str(tmp_path / "s.zip")]) == 1  # no exercise module


def _installed_bundle(root: Path) -> Path:
    """A bundle folder after ./install.sh: exercises, a .venv with symlinks out of it, build/, an egg-info."""
    (root / "exercises").mkdir(parents=True)
    shutil.copy(SOLUTIONS / "ex1_ratio.py", root / "exercises" / "ex1_ratio.py")
    (root / ".venv" / "bin").mkdir(parents=True)
    (root / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n", encoding="utf-8")
    (root / ".venv" / "bin" / "python").symlink_to("/usr/bin/python3")
    (root / ".venv" / "lib").mkdir()
    (root / ".venv" / "lib" / "ex1_ratio.py").write_text("# a copy inside site-packages\n", encoding="utf-8")
    (root / "build" / "lib" / "ppo_course").mkdir(parents=True)
    (root / "build" / "lib" / "ppo_course" / "x.py").write_text("", encoding="utf-8")
    (root / "ppo_course_student.egg-info").mkdir()
    (root / "ppo_course_student.egg-info" / "PKG-INFO").write_text("Name: x\n", encoding="utf-8")
    (root / "env").mkdir()  # a venv under another name: found by its pyvenv.cfg
    (root / "env" / "pyvenv.cfg").write_text("home = /usr/bin\n", encoding="utf-8")
    (root / "env" / "python").symlink_to("/usr/bin/python3")
    return root


def _zip_folder(folder: Path, out: Path) -> Path:
    """Zip a folder as `zip -ry` would: symlinks stored as links."""
    with zipfile.ZipFile(out, "w") as zf:
        for path in sorted(folder.rglob("*")):
            rel = path.relative_to(folder.parent).as_posix()
            if path.is_symlink():
                info = zipfile.ZipInfo(rel)
                info.external_attr = (0o120777 << 16)
                zf.writestr(info, os.readlink(path))
            elif path.is_file():
                zf.write(path, rel)
    return out


@pytest.mark.parametrize("as_zip", [False, True])
def test_the_intake_skips_tool_folders_with_a_note(tmp_path, as_zip):
    from ppo_course.submission_layout import entry_for, locate_modules, staged

    bundle = _installed_bundle(tmp_path / "ppo-ch5-student")
    path = _zip_folder(bundle, tmp_path / "bundle.zip") if as_zip else bundle
    entry = entry_for(path)
    assert entry.kind == ("zip" if as_zip else "dir")
    with staged(path) as sub:
        found = locate_modules(sub.root)
        notes = sub.notes
        kept = sorted(p.relative_to(sub.root).as_posix() for p in sub.root.rglob("*") if p.is_file())
    prefix = "ppo-ch5-student/" if as_zip else ""
    assert found.where == f"{prefix}exercises"
    assert kept == [f"{prefix}exercises/ex1_ratio.py"]
    skipped = sorted(n.split("'")[1] for n in notes if n.startswith("skipped the folder"))
    assert skipped == sorted(f"{prefix}{name}/" for name in (".venv", "build", "env", "ppo_course_student.egg-info"))


def test_a_symlink_out_of_the_submission_is_still_rejected(tmp_path):
    """Skipping tool folders is not a hole: a link outside them is refused as before."""
    from ppo_course.submission_layout import staged
    from ppo_course.submission_rules import Rejected

    bundle = _installed_bundle(tmp_path / "b")
    (bundle / "exercises" / "notes.txt").symlink_to("/etc/hostname")
    with pytest.raises(Rejected, match="points outside the submission"):
        with staged(bundle):
            pass


def test_a_bundle_folder_with_a_venv_is_graded(tmp_path, capsys):
    bundle = _installed_bundle(tmp_path / "ppo-ch5-student")
    out = tmp_path / "results.json"
    assert main(["grade", str(bundle), "--out", str(out), "--exercises", "ex1_ratio", "--profile", "fast",
                 "--quiet"]) == 0
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["extra_data"]["status"] == "graded" and data["score"] == 10, data["output"]
    assert "skipped the folder '.venv/'" in data["output"]


def test_the_rules_are_the_students_and_the_graders_alike():
    """One set of rules: grader/intake/submission.py defines none of the student-side modules' rules again."""
    import ast

    from ppo_course import submission_layout, submission_rules

    rules = {name for module in (submission_layout, submission_rules) for name in vars(module) if not name.startswith("_")}
    intake = ast.parse((REPO / "grader" / "intake" / "submission.py").read_text(encoding="utf-8"))
    defined = {n.name for n in intake.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    assert defined and not defined & rules, defined & rules
    for module in ("ppo_course/submission_rules.py", "ppo_course/submission_layout.py", "ppo_course/commands/submit.py",
                   "ppo_course/check_support/imports.py"):
        tree = ast.parse((REPO / module).read_text(encoding="utf-8"))
        imported = {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        imported |= {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        assert not imported & {"grader", "ppo_reference", "solutions"}, module
