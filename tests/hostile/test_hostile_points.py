"""Points without the work (red team, attack a100 on every exercise 1-6).

A module whose functions compute nothing (they return None, or their first
argument untouched, or raise ValueError; a ``RolloutBuffer`` whose methods do
the same) still has the properties that doing nothing has: it never modifies
its inputs in place, sends no gradient into constants, raises on a bad input.
Before, such modules earned 4.5 points of exercises 1-6: the
``*_inputs_untouched`` tests (0.5 each on exercises 1, 2, 3, 4 and 6), the
no-gradient tests (ex2 1.0, ex4 0.5, ex6 0.5) and, for a ``whiten`` that
always raises ValueError, its public and hidden one-element tests (1.0). Now a hidden property test names
the value tests it ``requires`` (grader/points.yaml, ``ExercisePoints.counted``),
so an empty submission scores exactly what the unstarted stubs score: 0,
on every one of three gradings.
"""

from __future__ import annotations

import ast
import os
import shutil

import pytest

from hostile_helpers import REPO, scores_by_test
from hostile_guards import Guards
from hostile_limits import SUITE_LIMITS

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("hostile")]

EXERCISES = ["ex1_ratio", "ex2_clipped_loss", "ex3_full_loss", "ex4_gae", "ex5_rollout_buffer", "ex6_kl_reward"]


def computes_nothing(stub_source: str, returns: str) -> str:
    """The stub with every public function's and method's body replaced by ``return <returns>``
    (``__init__`` keeps no state; ``returns`` may name the first parameter as ``first``)."""
    tree = ast.parse(stub_source)

    def hollow(fn: ast.FunctionDef, method: bool) -> None:
        params = [a.arg for a in fn.args.args][1 if method else 0:]
        first = params[0] if params else "None"
        body = returns if returns.startswith("raise") else f"return {returns.replace('first', first)}"
        fn.body = ast.parse({"__init__": "pass", "__len__": "return 0"}.get(fn.name, body)).body

    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            hollow(node, method=False)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    hollow(item, method=True)
    return ast.unparse(ast.fix_missing_locations(tree))


def _write(dest, returns: str | None):
    dest.mkdir(parents=True)
    for stem in EXERCISES:
        source = (REPO / "exercises" / f"{stem}.py").read_text()
        (dest / f"{stem}.py").write_text(source if returns is None else computes_nothing(source, returns))
    for path in [dest, *dest.iterdir()]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    return dest


def test_computes_nothing_rewrites_every_function():
    """The generator itself: no stub body (NotImplementedError) is left, every function returns."""
    for stem in EXERCISES:
        text = computes_nothing((REPO / "exercises" / f"{stem}.py").read_text(), "first")
        assert "NotImplementedError" not in text, stem
        assert "return" in text, stem


def test_a100_modules_that_compute_nothing_score_as_the_stubs(cohort_root, fork_server):
    from grader.grade import grade_submission

    stubs = grade_submission(_write(cohort_root / "stubs", None), exercises=EXERCISES, profile="fast",
                             limits=SUITE_LIMITS)
    want = scores_by_test(stubs)
    assert all(score == 0 for score, _ in want.values()), "the unstarted stubs must score 0"
    seen = []
    variants = ["None", "first", "raise ValueError('nothing here')", "None", "None"]  # "None": three gradings
    for i, returns in enumerate(variants):
        folder = _write(cohort_root / f"nothing{i}", returns)
        guards = Guards([folder], fork_server.pid)
        try:
            got = grade_submission(folder, exercises=EXERCISES, profile="fast", limits=SUITE_LIMITS)
            violations, leftovers = guards.violations(), guards.leftovers()
        finally:
            guards.restore()
            guards.close()
        assert not violations and not leftovers, violations + leftovers
        blamed = [t.test for t in got.tests if t.diagnosis == "grader_error"]
        assert not blamed, f"a module computing nothing ({returns}) made the grader blame itself on {blamed}"
        scores = scores_by_test(got)
        gained = {k: v[0] for k, v in scores.items() if v[0] > want[k][0]}
        assert not gained, f"a module computing nothing ({returns}) earned: {gained}"
        passed_uncounted = [t for t in got.tests if t.status == "passed" and t.score == 0 < t.max_score
                            and t.kind == "hidden"]
        assert all("counts once your function computes the values" in t.output for t in passed_uncounted), \
            [t.test for t in passed_uncounted]
        seen.append({stem: ex.score for stem, ex in got.exercises.items()})
        shutil.rmtree(folder)
    assert seen[0] == seen[3] == seen[4], f"three gradings of one submission differ: {seen}"
