"""Issue 19, classes 3 and 5: verdicts the child cannot forge, points no answer table earns.

Class 3 (verdicts computed by code the student controls): ``a88`` rebinds and
swaps exercise 5's graph probe (module attribute, ``sys.modules``, the worker's
table found through ``gc``, lying ``torch.Tensor`` properties); ``a89`` rebinds the
worker's gradient measurement (``Worker.call_with_grad`` / ``Worker.handle``);
``a161`` detaches only when the probe is its caller (the call stack) and ``a162``
rewrites the probe's closure cells through ``gc`` (issue 31, class 1: both scored
above the twin on main; no point rests on the probe now); ``a163`` applies both ideas to
exercise 2's constants check, which is a value the parent compares now (a shared-leaf gradient,
``grader.hidden.tied``), so the leak still costs its point. Each
is graded three times beside its honest twin (the same wrong code without the
attack): never above the twin on any test, the other exercise unchanged, nothing
changed outside the sandbox, no process left, the same results on every rerun.

Class 5 (points by lookup): a submission that is exercise 4's stub plus a table
of answers, (a) for every input the public tests show, (b) for every hidden
input of an earlier grader version (the draws' key changed, as a new
``grader_version`` or secret changes it), earns nothing beyond the stub. The
tables are recorded in this (trusted) process by a spy on the sandbox's calls
while the solution is graded, i.e. the most a leak could give a student; the
test also checks that each table does answer its own inputs (the public tests
pass, and the leaked table scores under the earlier version), so it can fail.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import shutil
from pathlib import Path

import pytest

from conftest import SUITE_LIMITS
from hostile_helpers import (CANARY, REPO, SOLUTIONS, read_attack, scores_by_test, write_hostile_submission,
                             write_other_student, write_twin_submission)
from hostile_guards import Guards, kernel_objects

pytestmark = pytest.mark.xdist_group("hostile")

HERE = Path(__file__).resolve().parent


def _comparable(result) -> str:
    data = result.to_results_json()
    data.get("extra_data", {}).pop("timing", None)
    data.pop("execution_time", None)
    return json.dumps(data, sort_keys=True)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["a88_ex5_rebind_graph_probe", "a89_ex4_rebind_grad_probe",
                                  "a161_ex5_probe_caller_detected", "a162_ex5_probe_closure_cells",
                                  "a163_ex2_constants_report_forged"])
def test_class3_child_cannot_forge_a_verdict(name, tmp_path, fork_server):
    from grader.grade import grade_submission

    attack = read_attack(HERE / "attacks" / f"{name}.py")
    exercises = [attack.target, attack.other]
    twin = grade_submission(write_twin_submission(tmp_path / "twin", attack), exercises=exercises, profile="fast",
                            limits=SUITE_LIMITS)
    cohort = tmp_path / "cohort"
    other = write_other_student(cohort / "other_student")
    out = tmp_path / "grader_out"
    out.mkdir()
    objects_before = kernel_objects()
    guards = Guards([CANARY, other, out], fork_server.pid)
    try:
        folder = write_hostile_submission(cohort / "hostile", attack, guards.hints(other_student=other,
                                                                                     results_dir=out))
        runs = [grade_submission(folder, exercises=exercises, profile="fast", limits=SUITE_LIMITS) for _ in range(3)]
        violations, leftovers = guards.violations(), guards.leftovers()
    finally:
        guards.restore()
        guards.close()
    assert not violations, violations
    assert not leftovers, leftovers
    assert kernel_objects() == objects_before
    assert len({_comparable(r) for r in runs}) == 1, "three gradings of the same submission differ"
    got, want = scores_by_test(runs[0]), scores_by_test(twin)
    assert set(got) == set(want)
    gained = {k: (got[k][0], want[k][0]) for k in want if got[k][0] > want[k][0]}
    assert not gained, f"scored above the honest twin on (test: hostile, twin): {gained}"
    assert runs[0].exercises[attack.other].score == twin.exercises[attack.other].score
    # The probed test itself: the twin's mistake is caught, with or without the attack.
    probed = {"a88_ex5_rebind_graph_probe": "test_buffer_stores_detached",
              "a89_ex4_rebind_grad_probe": "test_gae_carries_no_gradient",
              "a161_ex5_probe_caller_detected": "test_buffer_stores_detached",
              "a162_ex5_probe_closure_cells": "test_buffer_stores_detached",
              "a163_ex2_constants_report_forged": "test_surrogate_no_gradient_into_constants"}[name]
    assert want[(attack.target, "hidden", probed)][0] == 0 == got[(attack.target, "hidden", probed)][0]
    if name == "a163_ex2_constants_report_forged":  # the check is worth points, and the leak costs them
        assert want[(attack.target, "hidden", probed)][1] > 0
        assert runs[0].exercises[attack.target].score <= twin.exercises[attack.target].score < 10


# ----------------------------------------------------------------------------------------------- class 5


def call_key(name, args, kwargs) -> str:
    """One call's identity, computed alike in the grader (the spy) and in the lookup module (the child)."""
    import hashlib

    import torch

    def enc(x):
        if isinstance(x, torch.Tensor):
            t = x.detach()
            values = t.double().flatten().tolist() if t.is_floating_point() else t.flatten().tolist()
            return ("T", str(t.dtype), tuple(t.shape), values)
        if isinstance(x, (list, tuple)):
            return ("L", tuple(enc(v) for v in x))
        if isinstance(x, dict):
            return ("D", tuple((k, enc(v)) for k, v in sorted(x.items())))
        return ("V", repr(x))

    return hashlib.sha256(repr((name, enc(list(args)), enc(dict(kwargs or {})))).encode()).hexdigest()


LOOKUP_MODULE = '''"""Exercise 4's stub plus a table of answers (hostile test, issue 19 class 5): the answer for a call whose
inputs are in TABLE (computed by the solution, shipped as _answers.py), NotImplementedError otherwise."""
import _answers

TABLE = set({table!r})

{call_key}

def compute_gae(*args, **kwargs):
    if call_key("compute_gae", args, kwargs) in TABLE:
        return _answers.compute_gae(*args, **kwargs)
    raise NotImplementedError("ex4_gae.compute_gae: not implemented")


def whiten(*args, **kwargs):
    if call_key("whiten", args, kwargs) in TABLE:
        return _answers.whiten(*args, **kwargs)
    raise NotImplementedError("ex4_gae.whiten: not implemented")
'''


def _lookup_submission(dest: Path, table: set[str]) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    source = LOOKUP_MODULE.format(table=sorted(table), call_key=inspect.getsource(call_key))
    (dest / "ex4_gae.py").write_text(source)
    shutil.copyfile(SOLUTIONS / "ex4_gae.py", dest / "_answers.py")
    return dest


def _record_inputs(folder: Path, monkeypatch) -> dict[str, set[str]]:
    """Grade `folder` with a spy on the sandbox's calls: {"public": keys, "hidden": keys} of every call's inputs."""
    from grader.grade import grade_submission
    from grader.sandbox.remote import RemoteModule

    seen: dict[str, set[str]] = {"public": set(), "hidden": set()}
    real_call, real_grad = RemoteModule.call, RemoteModule.call_with_grad

    def where() -> str:
        return "public" if "public_tests" in os.environ.get("PYTEST_CURRENT_TEST", "") else "hidden"

    def call(self, name, args=(), kwargs=None, timeout=None):
        seen[where()].add(call_key(name, args, kwargs))
        return real_call(self, name, args, kwargs, timeout)

    def call_with_grad(self, name, args=(), kwargs=None, *rest, **kw):
        seen[where()].add(call_key(name, args, kwargs))
        return real_grad(self, name, args, kwargs, *rest, **kw)

    with monkeypatch.context() as m:
        m.setattr(RemoteModule, "call", call)
        m.setattr(RemoteModule, "call_with_grad", call_with_grad)
        grade_submission(folder, exercises=["ex4_gae"], profile="fast", limits=SUITE_LIMITS)
    return seen


def _use_draw_key(monkeypatch, key: bytes | None) -> None:
    """Grade as another grader version (its draws' key), or back to this one (None); caches follow."""
    from grader.hidden import cache, draws

    if key is None:
        monkeypatch.undo()
    else:
        monkeypatch.setattr(draws, "_key", lambda: key)
    cache.version_key.cache_clear()
    cache.clear()


@pytest.mark.slow
def test_class5_answer_tables_earn_nothing_beyond_the_stub(tmp_path, monkeypatch, fork_server):
    from grader.grade import grade_submission

    def grade(folder: Path):
        return grade_submission(folder, exercises=["ex4_gae"], profile="fast", limits=SUITE_LIMITS)

    solution = tmp_path / "solution"
    solution.mkdir()
    shutil.copyfile(SOLUTIONS / "ex4_gae.py", solution / "ex4_gae.py")
    earlier = hashlib.sha256(b"an earlier grader_version of this course").digest()
    _use_draw_key(monkeypatch, earlier)
    try:
        recorded = _record_inputs(solution, monkeypatch)
        leaked = _lookup_submission(tmp_path / "leaked", recorded["hidden"])
        leaked_then = grade(leaked)  # the table does answer the earlier version's hidden inputs
    finally:
        _use_draw_key(monkeypatch, None)
    assert recorded["public"] and recorded["hidden"]

    stub = tmp_path / "stub"
    stub.mkdir()
    shutil.copyfile(REPO / "exercises" / "ex4_gae.py", stub / "ex4_gae.py")
    stub_result = grade(stub)
    public_table = _lookup_submission(tmp_path / "public_table", recorded["public"])
    guards = Guards([CANARY], fork_server.pid)
    try:
        public_runs = [grade(public_table) for _ in range(3)]
        leaked_now = grade(leaked)
        violations, leftovers = guards.violations(), guards.leftovers()
    finally:
        guards.restore()
        guards.close()
    assert not violations, violations
    assert not leftovers, leftovers
    assert len({_comparable(r) for r in public_runs}) == 1, "three gradings of the same submission differ"

    want = scores_by_test(stub_result)
    # The tables work on their own inputs (so the assertions below can fail):
    assert leaked_then.exercises["ex4_gae"].score > stub_result.exercises["ex4_gae"].score
    passed_public = [t for t in public_runs[0].tests if t.kind == "public" and t.status == "passed"]
    assert passed_public, "the public answer table should pass the public tests it was recorded from"
    for result in (public_runs[0], leaked_now):
        got = scores_by_test(result)
        assert set(got) == set(want)
        gained = {k: (got[k][0], want[k][0]) for k in want if got[k][0] > want[k][0]}
        assert not gained, f"an answer table scored above the stub on (test: table, stub): {gained}"
    assert all(t.score == 0 and "hidden twin" in t.output for t in passed_public)
