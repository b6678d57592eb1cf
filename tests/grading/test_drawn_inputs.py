"""Issue 19, classes 3 and 5, without a sandbox: drawn hidden inputs, public points gated by hidden twins,
and exercise 5's graph probe judged in the parent from raw data.

Expected values are hand-made here (a reply built by hand, a points table of two tests), never taken
from the code under test.
"""

from __future__ import annotations

import ast
import importlib.util
import hashlib
from pathlib import Path

import pytest
import torch
from pydantic import ValidationError

from grader.hidden import cache, draws
from grader.points import ExercisePoints, load_points
from ppo_course.grading_kit.feedback import Mismatch

REPO = Path(__file__).resolve().parents[2]
HIDDEN = REPO / "grader" / "hidden"


@pytest.fixture
def other_key(monkeypatch):
    """Switch the draws to another grader version's key for one test (caches follow)."""
    def use(label: bytes) -> None:
        monkeypatch.setattr(draws, "_key", lambda: hashlib.sha256(label).digest())
        cache.version_key.cache_clear()
        cache.clear()

    yield use
    monkeypatch.undo()
    cache.version_key.cache_clear()
    cache.clear()


# ----------------------------------------------------------------------------- class 5: the points rule


def test_every_public_test_worth_points_names_hidden_twins():
    for stem, ex in load_points().exercises.items():
        for name, entry in ex.public.items():
            if entry.points > 0:
                assert entry.twins, f"{stem}.{name} has no hidden twin"
                assert all(t in ex.hidden for t in entry.twins), f"{stem}.{name}: {entry.twins}"


def test_points_file_refuses_a_public_test_without_a_twin_or_with_an_unknown_one():
    with pytest.raises(ValidationError, match="names no hidden twin"):
        ExercisePoints.model_validate({"title": "t", "hidden": {"test_h": 1}, "public": {"test_p": 1}})
    with pytest.raises(ValidationError, match="not hidden tests"):
        ExercisePoints.model_validate({"title": "t", "hidden": {"test_h": 1},
                                       "public": {"test_p": {"points": 1, "twins": ["test_x"]}}})
    # 0-point public checks need no twin.
    ExercisePoints.model_validate({"title": "t", "hidden": {"test_h": 1}, "public": {"test_p": 0}})


def test_public_points_count_only_with_every_twin_passing():
    ex = ExercisePoints.model_validate({"title": "t", "hidden": {"test_a": 1, "test_b": 1},
                                        "public": {"test_p": {"points": 1, "twins": ["test_a", "test_b"]}}})
    assert ex.counted("public", "test_p", True, lambda n: True)
    assert not ex.counted("public", "test_p", True, lambda n: n == "test_a")  # one twin failed
    assert not ex.counted("public", "test_p", False, lambda n: True)
    assert ex.counted("hidden", "test_a", True, lambda n: False)  # hidden tests are their own twins


# ----------------------------------------------------------------------------- class 5: drawn hidden inputs


def _literal_seeds(path: Path) -> list[str]:
    """`manual_seed(<literal>)` and `Batch(..., <literal seed>)` calls in a hidden test file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if name == "manual_seed" and node.args and isinstance(node.args[0], ast.Constant):
            found.append(f"{path.name}:{node.lineno} manual_seed({node.args[0].value})")
        if name == "Batch" and len(node.args) == 6 and isinstance(node.args[5], ast.Constant):
            found.append(f"{path.name}:{node.lineno} Batch(..., {node.args[5].value})")
    return found


def test_no_hidden_test_of_exercises_1_to_6_fixes_a_seed_in_its_source():
    fixed = [f for path in sorted(HIDDEN.glob("test_ex[1-6]_*.py")) for f in _literal_seeds(path)]
    assert not fixed, fixed


def test_the_checker_finds_a_fixed_seed(tmp_path):
    bad = tmp_path / "test_ex9_bad.py"
    bad.write_text("import torch\ng = torch.Generator().manual_seed(3)\nb = Batch(2, 4, (4, 2), 'float', 'float64', 8)\n")
    assert len(_literal_seeds(bad)) == 2


def test_hypothesis_seeds_are_drawn_per_version_and_fixed_within_one(other_key):
    from grader.hidden.conftest import seed_hidden_examples
    from grader.hidden.hypothesis_replay import examples, replayable
    from grader.hidden import test_ex4_gae as ex4

    test = ex4.test_gae_matches_reference
    other_key(b"version A")
    seed_hidden_examples(test)
    seed_a, examples_a = test._hypothesis_internal_use_seed, examples(test)
    assert replayable(test)
    seed_hidden_examples(test)
    assert test._hypothesis_internal_use_seed == seed_a and examples(test) == examples_a
    other_key(b"version B")
    seed_hidden_examples(test)
    seed_b, examples_b = test._hypothesis_internal_use_seed, examples(test)
    assert seed_b != seed_a
    seeds = lambda exs: [e["batch"].seed for e in exs]  # noqa: E731
    assert seeds(examples_b) != seeds(examples_a)


def test_hand_case_numbers_follow_the_draws(other_key):
    from grader.hidden.probes import buffer_graph_plan

    other_key(b"version A")
    a = (buffer_graph_plan(), draws.draw_float("ex4.whiten_constant.c", -5.0, 5.0, 40), draws.draw_seed("ex5.rollout.7"))
    assert a == (buffer_graph_plan(), draws.draw_float("ex4.whiten_constant.c", -5.0, 5.0, 40),
                 draws.draw_seed("ex5.rollout.7"))
    other_key(b"version B")
    b = (buffer_graph_plan(), draws.draw_float("ex4.whiten_constant.c", -5.0, 5.0, 40), draws.draw_seed("ex5.rollout.7"))
    assert a != b
    assert -5.0 <= a[1] <= 5.0 and (a[1] * 4).is_integer()


# ----------------------------------------------------------------------------- class 3: the graph probe


def _solution_buffer_module():
    spec = importlib.util.spec_from_file_location("ex5_solution_for_probe", REPO / "solutions" / "ex5_rollout_buffer.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_graph_probe_judged_in_the_parent():
    from grader.hidden.probes import buffer_graph_plan, expected_rows, judge_buffer_graph
    from ppo_course.sandbox.harness import buffer_graph_probe

    plan = buffer_graph_plan()
    module = _solution_buffer_module()
    judge_buffer_graph(plan, buffer_graph_probe(module, plan))  # detached copies: no Mismatch

    class KeepsGraph(module.RolloutBuffer):
        def add(self, **fields):
            super().add(**fields)
            self._chunks["values"][-1] = fields["values"].clone()  # the caller's graph kept

    module.RolloutBuffer = KeepsGraph
    with pytest.raises(Mismatch) as caught:
        judge_buffer_graph(plan, buffer_graph_probe(module, plan))
    assert caught.value.diagnosis == "buffer_keeps_graph"


def test_graph_probe_reply_without_the_drawn_rows_fails():
    from grader.hidden.probes import buffer_graph_plan, expected_rows, judge_buffer_graph

    plan = buffer_graph_plan()
    rows = expected_rows(plan)
    ids = torch.arange(plan["rows"])
    honest = {"batches": [[["ids", ids, False, False, True], ["values", rows.clone(), False, False, True]]]}
    judge_buffer_graph(plan, honest)
    forgeries = {
        "the old two-field answer": {"fields": 2, "keeps_graph": False},
        "made-up rows": {"batches": [[["ids", ids, False, False, True], ["values", rows + 1, False, False, True]]]},
        "a fact that is not a bool": {"batches": [[["ids", ids, 0, False, True], ["values", rows, False, False, True]]]},
        "no mini-batch": {"batches": []},
        "a tensor subclass": {"batches": [[["ids", ids, False, False, True], ["values", rows, False, False, False]]]},
    }
    for label, raw in forgeries.items():
        with pytest.raises(Mismatch) as caught:
            judge_buffer_graph(plan, raw)
        assert caught.value.diagnosis == "wrong_type", label
    graph = {"batches": [[["ids", ids, False, False, True], ["values", rows, True, True, True]]]}
    with pytest.raises(Mismatch) as caught:
        judge_buffer_graph(plan, graph)
    assert caught.value.diagnosis == "buffer_keeps_graph"


def test_graph_probe_ignores_rebound_module_attributes(monkeypatch):
    """The captured probe reads the graph through TensorBase's descriptors: lying Tensor properties change nothing."""
    from grader.hidden.probes import buffer_graph_plan
    from ppo_course.sandbox import harness

    probe = harness.trusted_operations()["buffer_graph"]
    module = _solution_buffer_module()

    class KeepsGraph(module.RolloutBuffer):
        def add(self, **fields):
            super().add(**fields)
            self._chunks["values"][-1] = fields["values"].clone()

    module.RolloutBuffer = KeepsGraph
    monkeypatch.setattr(torch.Tensor, "requires_grad", property(lambda self: False), raising=False)
    monkeypatch.setattr(torch.Tensor, "grad_fn", property(lambda self: None), raising=False)
    monkeypatch.setattr(harness, "buffer_graph_probe", lambda *a, **k: {"fields": 2, "keeps_graph": False})
    raw = probe(module, buffer_graph_plan())
    monkeypatch.undo()
    facts = [f[2] or f[3] for batch in raw["batches"] for f in batch if f[0] == "values"]
    assert facts and all(facts)
