"""Exercise 7's child data is validated before trusted code reads it (issue 19, class 6).

Whatever the child returns (a list where a dict belongs, strings for tensors,
tensors that require grad, unknown events, deep junk), `validate_result` never
raises and yields either None or typed data; the hidden grader's diagnosis of
a step (`diagnose_step`) on it never raises and returns a known diagnosis id;
the public test's stage checks never raise. Junk comes from hypothesis, plus
the malformed trace of the issue (a list where the `add` event's fields dict
belongs), which used to record the student `crashed`/grader_error.
"""

from __future__ import annotations

import copy
import warnings

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grader.mistakes.diagnose import DIAGNOSES
from ppo_course.grading_kit import step_checks, step_trace
from ppo_course.sandbox.observe import StepObserver  # noqa: F401 - the trace format's owner

pytestmark = pytest.mark.slow

EVENTS = sorted(step_trace.EVENT_MODELS)


@pytest.fixture(scope="module")
def setting():
    """(payload, the reference step's result) on a tiny seeded setting (the hidden test's own helpers)."""
    from grader.hidden import test_ex7_ppo_step as hidden

    torch.set_num_threads(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        payload = hidden.make_payload(seed=3, batch=8, ref_noise=0.05, **hidden.DEFAULT_CONFIG)
        want = hidden.buggy_ppo_step.run_reference_step(payload)
    return hidden, payload, want


def _leaf():
    return st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.floats(allow_nan=True),
                     st.text(max_size=8), st.just(torch.zeros(2, 3)), st.just(torch.ones(3, requires_grad=True)),
                     st.just(torch.tensor([1, 2]).long()))


def _junk():
    return st.recursive(_leaf(), lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                         st.dictionaries(st.text(max_size=6), inner, max_size=4)),
                        max_leaves=12)


def _event():
    """A dict that looks like an event: a real or made-up kind, fields of the real names with junk values."""
    names = sorted({f for m in step_trace.EVENT_MODELS.values() for f in m.model_fields} - {"ev"})
    return st.builds(lambda ev, fields: {"ev": ev, **fields},
                     st.one_of(st.sampled_from(EVENTS), _junk()),
                     st.dictionaries(st.sampled_from(names), _junk(), max_size=6))


def _trace():
    return st.one_of(_junk(), st.lists(st.one_of(_event(), _junk()), max_size=8))


@settings(max_examples=150, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(trace=_trace(), stats=_junk(), coef=_junk())
def test_junk_from_the_child_never_breaks_the_parent(setting, trace, stats, coef):
    hidden, payload, want = setting
    raw = {"state_dict": dict(payload["state_dict"]), "stats": stats, "kl_coef": coef, "trace": trace}
    got = step_trace.validate_result(raw)
    assert got is not None  # the parameters are fine: only the rest is junk
    assert got["trace"] is None or all(type(e) is dict and e["ev"] in step_trace.EVENT_MODELS for e in got["trace"])
    assert got["kl_coef"] is None or type(got["kl_coef"]) is float
    assert hidden.diagnose_step(got, payload, want) in DIAGNOSES
    cfg = payload["ppo_config"]
    found = step_checks.check_step(got["trace"], cfg, 8, cfg["init_kl_coef"], got["stats"], got["kl_coef"])
    assert found is None or found[0] in DIAGNOSES


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_one_corrupted_field_of_a_real_trace_drops_the_trace(setting, data):
    """A real trace with one field replaced by junk of another type validates to None or to typed events,
    and is diagnosed without an exception."""
    hidden, payload, want = setting
    trace = copy.copy(want["trace"])
    i = data.draw(st.integers(0, len(trace) - 1))
    event = dict(trace[i])
    key = data.draw(st.sampled_from(sorted(event)))
    event[key] = data.draw(_junk())
    trace[i] = event
    got = step_trace.validate_result({"state_dict": want["state_dict"], "stats": want["stats"],
                                      "kl_coef": want["kl_coef"], "trace": trace})
    assert got is not None
    assert hidden.diagnose_step(got, payload, want) in DIAGNOSES


def test_the_issues_malformed_trace_gets_a_diagnosis_not_a_grader_error(setting):
    """The add event's fields as a list (issue 19, class 6): the trace is dropped, the step still diagnosed."""
    hidden, payload, want = setting
    trace = [dict(e) for e in want["trace"]]
    add = next(e for e in trace if e["ev"] == "add")
    add["fields"] = list(add["fields"].values())
    moved = {k: v + 1e-2 for k, v in want["state_dict"].items()}
    got = step_trace.validate_result({"state_dict": moved, "stats": want["stats"], "kl_coef": want["kl_coef"],
                                      "trace": trace})
    assert got["trace"] is None
    assert hidden.diagnose_step(got, payload, want) == "wrong_value"


def test_a_valid_trace_passes_unchanged(setting):
    """The reference's own trace validates event for event (the schema is the observer's format)."""
    _, _, want = setting
    got = step_trace.validate_trace(want["trace"])
    assert got is not None and [e["ev"] for e in got] == [e["ev"] for e in want["trace"]]


def test_a_non_dict_result_or_bad_parameters_is_none():
    assert step_trace.validate_result([1, 2]) is None
    assert step_trace.validate_result({"state_dict": [torch.zeros(1)]}) is None
    assert step_trace.validate_result({"state_dict": {"w": "0"}}) is None
    assert step_trace.validate_result({"state_dict": {1: torch.zeros(1)}}) is None


def test_the_reference_policy_weights_come_back_validated():
    """`ref_state_dict` (the reference policy after the step) is kept when it is {str: Tensor}, detached;
    anything else becomes None without costing the rest of the result."""
    w = torch.ones(2, requires_grad=True) * 3.0
    got = step_trace.validate_result({"state_dict": {"w": torch.zeros(2)}, "ref_state_dict": {"w": w}})
    assert got is not None and torch.equal(got["ref_state_dict"]["w"], torch.full((2,), 3.0))
    assert not got["ref_state_dict"]["w"].requires_grad
    for bad in (None, [w], {"w": "3"}, {1: w}):
        got = step_trace.validate_result({"state_dict": {"w": torch.zeros(2)}, "ref_state_dict": bad})
        assert got is not None and got["ref_state_dict"] is None and torch.equal(got["state_dict"]["w"], torch.zeros(2))


def test_kl_controller_starts_at_the_payloads_value():
    """`harness.kl_controller_start`: config.init_kl_coef unless the payload gives the controller's value."""
    from ppo_course.config import PPOConfig
    from ppo_course.sandbox.harness import kl_controller_start

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        config = PPOConfig.toy(init_kl_coef=0.05)
    assert kl_controller_start({}, config) == 0.05
    assert kl_controller_start({"kl_coef": None}, config) == 0.05
    assert kl_controller_start({"kl_coef": 0.15}, config) == 0.15
