"""`ppo-course`'s two sides: the student package owns check/plot/quiz and names no instructor command; an
instructor's install adds its commands through `grader.commands`; a student install says clearly what it lacks."""

from __future__ import annotations

import argparse
import ast
import json
from pathlib import Path

import pytest

from ppo_course import cli

REPO = Path(__file__).resolve().parents[2]


def _student_sources() -> list[Path]:
    return sorted(p for p in (REPO / "ppo_course").rglob("*.py") if "__pycache__" not in p.parts)


def test_the_student_package_imports_nothing_trusted():
    """No `import`/`from` of grader, ppo_reference, solutions or the quiz keys anywhere under ppo_course/."""
    bad = []
    for path in _student_sources():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            bad += [f"{path.relative_to(REPO)}: {n}" for n in names
                    if n.split(".")[0] in ("grader", "ppo_reference", "solutions") or n == "quiz_bank.instructor.keys"]
    assert bad == []


def test_the_student_package_names_no_instructor_command_module():
    """The only instructor module the student side names is the one extension point, `grader.commands`."""
    named = []
    for path in _student_sources():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                    node.value.startswith(("grader.", "ppo_reference.")) and " " not in node.value:
                named.append(f"{path.relative_to(REPO)}: {node.value}")
    assert named == ["ppo_course/cli.py: grader.commands"]
    assert set(cli.COMMANDS) == {"check", "plot", "quiz", "submit", "train"}


def test_an_instructor_install_has_every_contract_command_and_its_own_plot():
    table = cli.command_table()
    contract = {"demo", "grade", "grade-batch", "check", "train", "quiz", "release", "similarity", "export"}
    assert contract <= set(table)
    assert table["plot"] == "grader.commands.plot" and table["check"] == "ppo_course.commands.check"
    assert list(table)[0] == "demo"  # the main job first in --help


def test_a_student_install_names_what_it_lacks(monkeypatch, capsys):
    """Without `grader` (the student bundle): `grade` is answered with exit 2 and a sentence, not a traceback."""
    monkeypatch.setattr(cli, "instructor_installed", lambda: False)
    assert cli.command_table() == cli.COMMANDS
    assert cli.main(["grade", "sub", "--out", "r.json"]) == 2
    err = capsys.readouterr().err
    assert "'grade' is not a command of this install" in err and "check, plot, quiz" in err
    with pytest.raises(SystemExit) as exc:  # a student command still parses as usual
        cli.main(["plot", "--help"])
    assert exc.value.code == 0
    assert "--save-data" not in capsys.readouterr().out  # computing run data is the instructor's


def test_student_plot_without_data_says_to_pass_it(tmp_path: Path, capsys):
    from ppo_course.commands import plot

    parser = argparse.ArgumentParser()
    plot.add_arguments(parser)
    args = parser.parse_args(["lifecycle", "--out", str(tmp_path / "x.png")])
    assert plot.run(args) == 2
    assert "pass --data FILE.json" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()


def test_instructor_plot_computes_missing_data_and_saves_it(tmp_path: Path, monkeypatch):
    """`grader.commands.plot` hands its data source to the student's command; --save-data keeps the JSON."""
    from grader import figure_runs
    from grader.commands import plot

    life = {"clip_eps": 0.2, "ppo_epochs": 1, "source": "hand-made",
            "minibatches": [{"cycle": 0, "epoch": 0, "minibatch": 0, "ratio_min": 1.0, "ratio_p10": 1.0,
                             "ratio_median": 1.0, "ratio_p90": 1.0, "ratio_max": 1.0, "clipfrac": 0.0}]}
    calls = []
    monkeypatch.setattr(figure_runs, "lifecycle_data", lambda cycles: calls.append(cycles) or life)
    parser = argparse.ArgumentParser()
    plot.add_arguments(parser)
    args = parser.parse_args(["lifecycle", "--out", str(tmp_path / "l.png"), "--cycles", "2",
                              "--save-data", str(tmp_path / "d" / "life.json")])
    assert plot.run(args) == 0
    assert calls == [2]
    assert json.loads((tmp_path / "d" / "life.json").read_text(encoding="utf-8")) == life
    assert (tmp_path / "l.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
