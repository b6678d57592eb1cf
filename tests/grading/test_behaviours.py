"""Every documented behaviour has a grading test (issue 16): grader/mistakes/behaviours.yaml against the docstrings.

The promises are extracted by rule from solutions/ex*.py (`grader.mistakes.behaviours`); each must be listed in
grader/mistakes/behaviours.yaml with at least one hidden test that exists in grader/hidden/test_<exercise>.py and
has points (or a 0-point "informational" entry) in grader/points.yaml.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from grader.mistakes.behaviours import (REPO, Behaviour, _doc_promises, extract_promises, hidden_test_names, load_behaviours,
                               normalise)
from grader.points import load_points

CONTRACT = Path("/work/shared/CONTRACT.md")  # outside the repository: checked where it exists
ARCHITECTURE = REPO / "docs" / "ARCHITECTURE.md"


def _key(exercise: str, where: str, promise: str) -> tuple[str, str, str]:
    return exercise, where, normalise(promise)


def test_every_docstring_promise_has_a_grading_test():
    """A promise of a docstring that behaviours.yaml does not list (with a test) fails here, by name."""
    listed = {_key(b.exercise, b.where, b.promise) for b in load_behaviours() if b.source == "docstring" and b.tests}
    missing = [p for p in extract_promises() if _key(p.exercise, p.where, p.promise) not in listed]
    assert not missing, "docstring promises without a grading test in grader/mistakes/behaviours.yaml:\n" + "\n".join(
        f"  {p.exercise} {p.where}: {p.promise[:120]}" for p in missing)


def test_every_listed_test_exists_and_counts():
    """Each listed test is defined in its hidden module and has an entry in grader/points.yaml."""
    points = load_points()
    problems = []
    for b in load_behaviours():
        assert b.tests, f"{b.exercise} {b.where}: no test listed"
        defined = hidden_test_names(b.exercise)
        in_points = set(points.exercises[b.exercise].hidden)
        for test in b.tests:
            if test not in defined or test not in in_points:
                problems.append(f"{b.exercise}.{test} ({'not defined' if test not in defined else 'no points entry'})")
    assert not problems, "\n".join(problems)


def _flat(text: str) -> str:
    return normalise(text.replace("#", " "))


def test_every_quote_is_in_its_source():
    """Docstring entries quote a current docstring sentence; architecture (and, where present, contract)
    entries quote their document, so that an edited promise cannot keep a stale entry."""
    docstring_promises = {_key(p.exercise, p.where, p.promise) for p in extract_promises()}
    sources = {"architecture": _flat(ARCHITECTURE.read_text(encoding="utf-8"))}
    if CONTRACT.is_file():
        sources["contract"] = _flat(CONTRACT.read_text(encoding="utf-8"))
    stale = []
    for b in load_behaviours():
        if b.source == "docstring":
            extracted = _key(b.exercise, b.where, b.promise) in docstring_promises
            in_module = normalise(b.promise).split(": ", 1)[-1][:60] in normalise(
                (REPO / "solutions" / f"{b.exercise}.py").read_text(encoding="utf-8"))
            if not (extracted or in_module):
                stale.append(f"{b.exercise} {b.where}: {b.promise[:80]}")
        elif b.source in sources and _flat(b.promise) not in sources[b.source]:
            stale.append(f"{b.source}: {b.promise[:80]}")
        elif b.source not in ("docstring", "contract", "architecture"):
            stale.append(f"unknown source {b.source!r}")
    assert not stale, "entries that quote nothing current:\n" + "\n".join(stale)


def test_the_rule_finds_promises():
    """The extraction rule itself: a summary, a 'must' sentence, a numbered step and each Raises entry."""
    doc = ("Do a thing.\n\nIt must keep x. It is blue.\n\n1. first step\n   continued.\n\n"
           "Raises:\n    ValueError: if bad\n        really bad.\n    RuntimeError: if late.\n")
    assert _doc_promises(doc) == ["Do a thing.", "It must keep x.", "1. first step continued.",
                                  "ValueError: if bad really bad.", "RuntimeError: if late."]
    assert len(extract_promises()) >= 50


def test_an_unlisted_promise_is_reported(tmp_path):
    """The check can fail: a solution with one more Raises entry yields a promise that is not listed."""
    for path in (REPO / "solutions").glob("ex*.py"):
        (tmp_path / path.name).write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    target = tmp_path / "ex4_gae.py"
    text = target.read_text(encoding="utf-8")
    text = re.sub(r"(\n\s+Raises:\n)", r"\1        TypeError: if gamma is a string.\n", text, count=1)
    target.write_text(text, encoding="utf-8")
    listed = {_key(b.exercise, b.where, b.promise) for b in load_behaviours()}
    extra = [p for p in extract_promises(tmp_path) if _key(p.exercise, p.where, p.promise) not in listed]
    assert [p.promise for p in extra] == ["TypeError: if gamma is a string."]


@pytest.mark.parametrize("behaviour", load_behaviours(), ids=lambda b: f"{b.exercise}:{b.where}:{b.promise[:30]}")
def test_entries_are_well_formed(behaviour: Behaviour):
    assert behaviour.promise.strip() and behaviour.exercise.startswith("ex")


def test_the_rule_finds_every_args_entry_and_the_returns_section():
    """Every Args entry (a parameter, or a group of them, with its continuation lines) and the whole Returns
    section are clauses too: a clause with no test fails test_every_docstring_promise_has_a_grading_test."""
    doc = ("Do a thing.\n\nArgs:\n    x: Float[B, T], the data;\n        continued here.\n"
           "    a, b: two coefficients.\n    **fields: keyword tensors.\n\n"
           "Returns:\n    Float[B, T] in the dtype of x,\n    detached.\n")
    assert _doc_promises(doc) == ["Do a thing.", "x: Float[B, T], the data; continued here.",
                                  "a, b: two coefficients.", "**fields: keyword tensors.",
                                  "Returns: Float[B, T] in the dtype of x, detached."]
    clauses = {(p.exercise, p.where, p.promise.split(":")[0]) for p in extract_promises()}
    assert ("ex4_gae", "compute_gae", "Returns") in clauses and ("ex4_gae", "compute_gae", "lam") in clauses
    assert ("ex5_rollout_buffer", "RolloutBuffer.add", "**fields") in clauses


def test_the_promised_cycle_rules_and_returns_carry_points():
    """Exercise 4's Returns clauses and exercise 5's cycle rules are graded by tests worth points; every Raises
    clause's test is worth points (small, with `requires:`), none is a 0-point report any more."""
    points = load_points()
    behaviours = load_behaviours()
    for exercise, where, head in (("ex4_gae", "compute_gae", "Returns"), ("ex4_gae", "whiten", "Returns"),
                                  ("ex5_rollout_buffer", "RolloutBuffer.add", "**fields")):
        tests = next(b.tests for b in behaviours if (b.exercise, b.where) == (exercise, where)
                     and b.promise.startswith(head))
        assert any(points.exercises[exercise].hidden[t].points > 0 for t in tests), (exercise, where, head)
    for b in behaviours:
        if b.source == "docstring" and re.match(r"^(ValueError|RuntimeError):", b.promise):
            worth = [points.exercises[b.exercise].hidden[t].points for t in b.tests]
            assert any(p > 0 for p in worth), f"{b.exercise} {b.where}: {b.promise[:60]} is graded at 0 points"
