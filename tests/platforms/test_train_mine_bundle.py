"""``ppo-course train --mine`` in the student bundle: the reference's curve from the shipped runs, the piece at fault
named by the public tests, stubs listed; and the bundle holds the runs' statistics but no reference code.

The bundle-side runs are child processes that import the bundle's own ``ppo_course`` with ``ppo_reference``,
``grader`` and ``solutions`` not importable (the editable install's finders dropped), as on a student's machine.
Expected values: the shipped statistics are compared with ``ppo_reference``'s own run (independent of the code that
ships them); the piece named is the mistake catalogue's ``EXERCISE``/``DIAGNOSIS`` of the entry
(tests/catalogue/buggy).
"""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import BUNDLE_STEPS, REPO, clean_env

from ppo_course.training.alarms import WATCHED

#: Run in the child: drop the editable install's finders (the only way the instructor's packages are found),
#: put the bundle first, check that nothing instructor-side is importable, run the CLI.
CHILD = """
import importlib.util, sys
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
sys.path_hooks[:] = [h for h in sys.path_hooks if "editable" not in repr(h).lower()]
sys.path_importer_cache.clear()
sys.path.insert(0, sys.argv[1])
for name in ("ppo_reference", "grader", "solutions"):
    assert importlib.util.find_spec(name) is None, name
import ppo_course
assert ppo_course.__file__.startswith(sys.argv[1]), ppo_course.__file__
from ppo_course.cli import main
sys.exit(main(sys.argv[2:]))
"""


def _train(bundle: Path, folder: Path, out: Path, *flags: str) -> subprocess.CompletedProcess:
    argv = ["train", "--mine", str(folder), "--steps", str(BUNDLE_STEPS), "--out", str(out), "--no-progress",
            "--log-every", "0", *flags]
    return subprocess.run([sys.executable, "-c", CHILD, str(bundle), *argv], capture_output=True, text=True,
                          cwd=out.parent, env=clean_env(COLUMNS="200"), timeout=600)


def _folder(tmp_path: Path, replace: dict[str, str] | None = None) -> Path:
    folder = tmp_path / "exercises"
    folder.mkdir(parents=True)
    for path in (REPO / "solutions").glob("ex*.py"):
        shutil.copy(path, folder)
    for stem, text in (replace or {}).items():
        (folder / f"{stem}.py").write_text(text, encoding="utf-8")
    return folder


def _entry(name: str) -> tuple[str, str, str]:
    """(exercise, catalogued diagnosis, the solution with the entry appended: tests/catalogue/README.md)."""
    text = (REPO / "tests" / "catalogue" / "buggy" / f"{name}.py").read_text(encoding="utf-8")
    meta = {t.id: n.value.value for n in ast.parse(text).body if isinstance(n, ast.Assign)
            for t in n.targets if isinstance(t, ast.Name) and isinstance(n.value, ast.Constant)}
    base = (REPO / "solutions" / f"{meta['EXERCISE']}.py").read_text(encoding="utf-8")
    return meta["EXERCISE"], meta["DIAGNOSIS"], base.rstrip("\n") + "\n\n\n" + text


def test_the_bundle_ships_the_reference_runs_statistics_and_no_reference_code(bundle: Path, tmp_path: Path):
    from rich.console import Console

    from grader.mistakes.train_reference import ReferenceTrainSide
    from ppo_course.config import PPOConfig

    runs = json.loads((bundle / "ppo_course" / "training" / "reference_runs.json").read_text())["runs"]
    assert [r["config"] for r in runs] == [PPOConfig.toy().model_dump()]
    # The reference's own run from the same seed (ppo_reference.train), not the file's writer.
    want = ReferenceTrainSide().run(PPOConfig.toy(), BUNDLE_STEPS, device="cpu", console=Console(quiet=True),
                                    show_progress=False)
    assert [r["step"] for r in runs[0]["steps"]] == [1.0, 2.0, 3.0]
    for got, ref in zip(runs[0]["steps"], want):
        assert {k: got[k] for k, _ in WATCHED} == {k: ref[k] for k, _ in WATCHED}
    # Statistics only: a config and numbers per step (no weights, no code); no reference package beside them.
    assert set(runs[0]) == {"config", "steps"}
    assert all(isinstance(v, (float, int)) or v is None for row in runs[0]["steps"] for v in row.values())
    assert not (bundle / "ppo_reference").exists() and not (bundle / "solutions").exists()
    # The student distribution's package data takes the .json along (pip install of the bundle).
    assert '"*.json"' in (bundle / "pyproject.toml").read_text()


def test_the_default_release_ships_train_mines_default_run():
    """The release's runs include what a bare ``train --mine`` runs (the parser's default steps and seed)."""
    import argparse

    from grader.platforms.release import REFERENCE_RUNS
    from ppo_course.commands.train import add_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--mine"])
    assert ({}, args.steps) in REFERENCE_RUNS and args.seed == 0


@pytest.mark.slow
def test_in_the_bundle_both_curves_are_drawn_and_a_broken_piece_is_named_by_the_public_tests(bundle, tmp_path):
    exercise, diagnosis, module = _entry("ex3_full_loss__entropy_sign")
    out = tmp_path / "out"
    done = _train(bundle, _folder(tmp_path, {exercise: module}), out)
    printed = done.stdout + done.stderr
    assert "came with this bundle" in printed, printed
    log = json.loads((out / "train_log.json").read_text())
    assert len(log["reference_steps"]) == BUNDLE_STEPS and len(log["steps"]) >= 1
    assert log["alarms"], printed
    finding = log["summary"]["findings"][0]
    assert f"the first of your pieces whose public tests fail is {exercise}" in finding, finding
    assert f"[{diagnosis}]" in finding, finding
    assert "the reference run shipped with the bundle" in printed
    assert (out / "train.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_in_the_bundle_other_flags_draw_the_students_curve_alone_and_say_so(bundle, tmp_path):
    out = tmp_path / "out"
    done = _train(bundle, _folder(tmp_path), out, "--cliprange", "0.1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no reference run for these flags" in done.stdout and "--steps <= 3" in done.stdout
    log = json.loads((out / "train_log.json").read_text())
    assert log["reference_steps"] == [] and len(log["steps"]) == BUNDLE_STEPS


def test_in_the_bundle_stubs_are_listed_and_the_run_refused(bundle, tmp_path):
    folder = tmp_path / "exercises"
    shutil.copytree(bundle / "exercises", folder)
    shutil.copy(REPO / "solutions" / "ex1_ratio.py", folder)  # one exercise done, six to go
    done = _train(bundle, folder, tmp_path / "out")
    assert done.returncode == 1
    assert "train --mine needs all seven exercises implemented" in done.stderr, done.stderr
    assert "ex4_gae (compute_gae, whiten)" in done.stderr and "ex1_ratio (" not in done.stderr
    assert not (tmp_path / "out" / "train_log.json").exists()
