"""One name per mistake: the public tests name each catalogued mistake as the hidden tests do (issue 21, item 12).

Every buggy entry of exercises 1-6 (`tests/catalogue/buggy/`) is run through
that exercise's public tests in-process, as `ppo-course check` runs them
(`LocalModule`): every public test that fails must name the entry's own
diagnosis (`DIAGNOSIS` or one of `ALSO`, the ids the hidden tests give, see
KILL_RATE.md), never `wrong_value` ("matches none of the known mistakes");
correct variants pass every public test. Exercise 7's public test has its own
file (`tests/ppo_step/test_public_ex7_checks.py`). The public candidates come
from `ppo_course/grading_kit/known_mistakes.json`, generated from
`grader/mistakes/buggy_variants.py` (the hidden tests' variants) by
`tools/make_known_mistakes.py`; `test_known_mistakes_table_is_current` keeps it
in step.
"""

from __future__ import annotations

import importlib
import inspect
import json
import sys
from pathlib import Path

import pytest
import torch

import catalogue_tool
from ppo_course.check_support.local import LocalModule, LocalProvider
from ppo_course.grading_kit.feedback import Mismatch

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
EXERCISES = ("ex1_ratio", "ex2_clipped_loss", "ex3_full_loss", "ex4_gae", "ex5_rollout_buffer", "ex6_kl_reward")
ENTRIES = [e for e in catalogue_tool.load_entries() if e.exercise in EXERCISES]
# entry -> why a public test still says something else (strict: it fails once fixed).
KNOWN_GAPS: dict[str, str] = {
    "ex4_gae__unseen1_u31_returns_reward_to_go": (
        "returns as the undiscounted reward-to-go: test_gae_hand_case says only the generic wrong_value "
        "(no variant reproduces a reward-to-go return); the returns tests name returns_not_a_plus_v"),
}


def _public_outcomes(entry, workdir: Path) -> dict[str, str]:
    """{public test: diagnosis} of the failing public tests of the entry's exercise."""
    module = catalogue_tool.import_composed(entry, workdir)
    public = importlib.import_module(f"ppo_course.public_tests.test_{entry.exercise}")
    student = LocalModule(module)
    failed = {}
    for name, test in inspect.getmembers(public, inspect.isfunction):
        if not name.startswith("test_"):
            continue
        kwargs = {"student": student}
        if "error_name" in inspect.signature(test).parameters:
            kwargs["error_name"] = lambda exc: type(exc).__name__
        try:
            test(**kwargs)
        except Mismatch as exc:
            failed[name] = exc.diagnosis
        except Exception as exc:  # noqa: BLE001 - the student's exception, as check classifies it
            found = LocalProvider.classify(exc)
            failed[name] = found[0] if found else f"error: {type(exc).__name__}"
    return failed


def _params():
    return [pytest.param(e, id=e.name, marks=[pytest.mark.xfail(reason=KNOWN_GAPS[e.name], strict=True)]
                         if e.name in KNOWN_GAPS else []) for e in ENTRIES]


@pytest.mark.parametrize("entry", _params())
def test_every_failing_public_test_names_the_mistake(entry, tmp_path):
    torch.set_num_threads(1)
    failed = _public_outcomes(entry, tmp_path)
    if entry.kind == "correct":
        assert not failed, f"{entry.name} is correct but fails {failed}"
        return
    allowed = {entry.diagnosis, *entry.also}
    wrong = {name: d for name, d in failed.items() if d not in allowed}
    assert not wrong, f"{entry.name} ({entry.diagnosis}): public tests name {wrong}"


def test_known_mistakes_table_is_current():
    """The committed table equals what tools/make_known_mistakes.py computes from grader/mistakes/buggy_variants.py now."""
    sys.path.insert(0, str(REPO / "tools"))
    try:
        import make_known_mistakes
    finally:
        sys.path.remove(str(REPO / "tools"))
    committed = json.loads((REPO / "ppo_course" / "grading_kit" / "known_mistakes.json").read_text())
    fresh = json.loads(json.dumps(make_known_mistakes.build()))
    assert committed.keys() == fresh.keys()
    for case in fresh:
        assert [r[:3] for r in committed[case]] == [r[:3] for r in fresh[case]], case
        for a, b in zip(committed[case], fresh[case]):
            assert all(x == y or abs(float(x) - float(y)) <= 1e-12 for x, y in zip(a[3], b[3])), (case, a[0])
