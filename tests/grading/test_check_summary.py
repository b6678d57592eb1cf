"""`ppo-course check`'s summary: one line per unavailable / unimplemented module, boxes only for
tests that ran and failed, the table last, and `-e` prefixes (ppo_course/check_support/summary.py,
ppo_course/commands/check.py). The summary reads typed results (`check_support.results`): the states
and places below are given as the child records them, never parsed from a traceback's text."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from ppo_course.check_support.results import CheckRun, ModuleReport, TestOutcome
from ppo_course.check_support.summary import render, summarise
from ppo_course.commands.check import resolve_stems
from ppo_course.syllabus import EXERCISES as STEMS


def _outcome(stem, test, passed=True, diagnosis=None, detail=""):
    return TestOutcome(exercise=stem, test=test, doc=f"doc of {test}", passed=passed, diagnosis=diagnosis,
                       detail=detail, items=1)


def _run(outcomes, **modules):
    return CheckRun(outcomes=list(outcomes), modules=dict(modules))


def _folder(tmp_path, *stems):
    for stem in stems:
        (tmp_path / f"{stem}.py").write_text("", encoding="utf-8")
    return tmp_path


SYNTAX = ('importing ex4_gae.py failed: File "/x/ex4_gae.py", line 12\n    def f(:\n          ^\n'
          "SyntaxError: invalid syntax")
SIBLING = SYNTAX.replace("importing ex4_gae.py", "importing ex7_ppo_step.py")
NOT_IMPL = "NotImplementedError: ex1_ratio.probability_ratio: implement r"


def test_an_import_error_is_an_import_error_state(tmp_path):
    detail = "importing ex4_gae.py failed: NameError: name 'x' is not defined"
    report = ModuleReport("import_error", "NameError", 3, "ex4_gae.py", detail)
    (row,) = summarise(_run([_outcome("ex4_gae", "t0", False, "module_broken", detail)], ex4_gae=report),
                       _folder(tmp_path, "ex4_gae"), ["ex4_gae"])
    assert (row.state, row.status) == ("import_error", "does not import (NameError)")


def test_an_unknown_state_is_refused():
    with pytest.raises(ValueError, match="unknown exercise state"):
        ModuleReport("broken")


def test_statuses_per_exercise(tmp_path):
    folder = _folder(tmp_path, "ex1_ratio", "ex2_clipped_loss", "ex4_gae", "ex7_ppo_step")
    outcomes = [_outcome("ex1_ratio", f"t{i}", False, "not_implemented", NOT_IMPL) for i in range(3)]
    outcomes += [_outcome("ex2_clipped_loss", f"t{i}", i != 0, None if i else "max_instead_of_min",
                          "expected 1 got 2") for i in range(4)]
    outcomes += [_outcome("ex4_gae", f"t{i}", False, "module_broken", SYNTAX) for i in range(4)]
    outcomes += [_outcome("ex7_ppo_step", "t0", False, "module_broken", SIBLING)]
    syntax = dict(state="syntax_error", error_type="SyntaxError", error_line=12, error_file="ex4_gae.py")
    run = _run(outcomes, ex1_ratio=ModuleReport(not_implemented=["probability_ratio"]),
               ex4_gae=ModuleReport(**syntax, detail=SYNTAX), ex7_ppo_step=ModuleReport(**syntax, detail=SIBLING))
    rows = {r.stem: r for r in summarise(run, folder, ["ex1_ratio", "ex2_clipped_loss", "ex3_full_loss",
                                                       "ex4_gae", "ex7_ppo_step"])}
    assert rows["ex1_ratio"].status == "not implemented"
    assert rows["ex1_ratio"].panels == [] and len(rows["ex1_ratio"].lines) == 1
    assert "probability_ratio" in rows["ex1_ratio"].lines[0]
    assert rows["ex2_clipped_loss"].status == "3/4 passed"
    assert [o.test for o in rows["ex2_clipped_loss"].panels] == ["t0"]
    assert rows["ex3_full_loss"].status == "module not found"
    assert rows["ex4_gae"].status == "syntax error line 12" and rows["ex4_gae"].panels == []
    assert rows["ex7_ppo_step"].status == "does not import (syntax error in ex4_gae.py line 12)"
    # The grader's state names (ppo_course/grading_kit/states.py), the same words as ExerciseResult.state.
    assert {stem: r.state for stem, r in rows.items()} == {
        "ex1_ratio": "not_implemented", "ex2_clipped_loss": "graded", "ex3_full_loss": "missing",
        "ex4_gae": "syntax_error", "ex7_ppo_step": "syntax_error"}
    # the SyntaxError's text is printed once, not once per test or per module
    text = "\n".join(line for r in rows.values() for line in r.lines)
    assert text.count("SyntaxError: invalid syntax") == 1


def test_render_puts_the_table_last_and_keeps_exit_codes(tmp_path):
    folder = _folder(tmp_path, "ex1_ratio", "ex2_clipped_loss")
    outcomes = [_outcome("ex1_ratio", f"t{i}", False, "not_implemented", NOT_IMPL) for i in range(6)]
    outcomes += [_outcome("ex2_clipped_loss", "t0", False, "max_instead_of_min", "expected 1 got 2")]
    buf = io.StringIO()
    run = _run(outcomes, ex1_ratio=ModuleReport(not_implemented=["probability_ratio"]))
    code = render(run, folder, ["ex1_ratio", "ex2_clipped_loss"], Console(file=buf, width=200, color_system=None))
    out = buf.getvalue()
    assert code == 1
    assert out.count("NotImplementedError") == 1  # one line for six unimplemented tests
    assert out.count("max_instead_of_min") == 1  # one box for the test that ran and failed
    assert out.rindex("exercise") > out.rindex("max_instead_of_min")  # the table comes last
    assert "not implemented" in out.splitlines()[-3] or "not implemented" in out[out.rindex("exercise"):]
    ok = _run([_outcome("ex1_ratio", "t0")])
    assert render(ok, folder, ["ex1_ratio"], Console(file=io.StringIO())) == 0


def test_exercise_prefixes():
    assert resolve_stems(["ex4"]) == (["ex4_gae"], [])
    assert resolve_stems(["ex4_gae", "ex4"]) == (["ex4_gae"], [])
    stems, problems = resolve_stems(["ex"])
    assert stems == [] and "ambiguous" in problems[0]
    assert resolve_stems(["ex9"])[1] and resolve_stems([])[0] == []
    assert all(resolve_stems([s]) == ([s], []) for s in STEMS)
