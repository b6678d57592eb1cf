"""Exercise 7's diagnosis by stage for step mistakes the catalogue does not know (issue 21, item 13).

Each case is the solution's step with one held-out change (not in
`tests/catalogue/buggy/`, not a switch of `grader/mistakes/buggy_ppo_step.py`), run in
the observer as the child's harness runs it; the hidden grader's
`diagnose_step` must name the stage where it first departs from the reference
instead of a bare `wrong_value`. The expected stage follows from where the
change sits in the stub's order (Book fig. 5.1), not from the code under test.
"""

from __future__ import annotations

import sys
import types
import warnings
from pathlib import Path

import pytest
import torch

from ppo_course.grading_kit import step_trace
from ppo_course.sandbox.harness import run_ppo_step

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
SIBLINGS = ("ex1_ratio", "ex3_full_loss", "ex4_gae", "ex5_rollout_buffer", "ex6_kl_reward")

# (name, text of the solution, its replacement, the stage that must be named: the stage id, or the named
# diagnosis of grader/mistakes/ppo_step_diagnosis.py that says the same stage)
HELD_OUT = [
    ("scores_doubled", "scores = reward_fn(responses, mask)  # (B,)", "scores = 2 * reward_fn(responses, mask)",
     {"ppo_step_stage_rewards", "ppo_step_rewards_wrong"}),
    ("advantages_clamped", "    advantages = ex4_gae.whiten(advantages, mask)\n",
     "    advantages = ex4_gae.whiten(advantages, mask).clamp(-1.0, 1.0)\n", "ppo_step_stage_whitening"),
    ("returns_are_rewards", "values=values, advantages=advantages, returns=returns,",
     "values=values, advantages=advantages, returns=rewards,", "ppo_step_returns_wrong"),  # the stored returns
    ("weight_decay_at_the_end", "    buf.purge()\n",
     "    buf.purge()\n    with torch.no_grad():\n        for p in policy.parameters():\n            p.mul_(0.999)\n",
     "ppo_step_stage_weights"),
    ("advantages_doubled_after_gae",
     "advantages, returns = ex4_gae.compute_gae(rewards, values, mask, config.gamma, config.lam)",
     "advantages, returns = ex4_gae.compute_gae(rewards, values, mask, config.gamma, config.lam)\n"
     "    advantages = advantages + 0.5 * advantages.detach().abs()", "ppo_step_stage_whitening"),
]


@pytest.fixture(scope="module")
def setting():
    from grader.hidden import test_ex7_ppo_step as hidden

    torch.set_num_threads(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        payload = hidden.make_payload(seed=5, batch=8, ref_noise=hidden.REF_NOISE, **hidden.DEFAULT_CONFIG)
        want = hidden.buggy_ppo_step.run_reference_step(payload)
    return hidden, payload, want


def _module(source: str) -> types.ModuleType:
    """The edited solution, its imports served by the solutions' ex1-ex6 (put in sys.modules while it runs)."""
    sys.path.insert(0, str(REPO / "solutions"))
    try:
        module = types.ModuleType("ex7_held_out")
        exec(compile(source, "ex7_held_out.py", "exec"), module.__dict__)
    finally:
        sys.path.remove(str(REPO / "solutions"))
    return module


@pytest.mark.parametrize("name,old,new,stage", HELD_OUT, ids=[c[0] for c in HELD_OUT])
def test_held_out_mistake_is_named_by_stage(name, old, new, stage, setting):
    hidden, payload, want = setting
    source = (REPO / "solutions" / "ex7_ppo_step.py").read_text()
    assert source.count(old) == 1, f"{name}: the solution's line moved"
    module = _module(source.replace(old, new))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = step_trace.validate_result(run_ppo_step(module, dict(payload)))
    assert not hidden.compare.params_close(got["state_dict"], want["state_dict"], atol=hidden.PARAM_ATOL)
    assert hidden.diagnose_step(got, payload, want) in ({stage} if isinstance(stage, str) else stage)


def test_a_correct_step_departs_nowhere(setting):
    """The stage walk on the solution's own trace finds no departing stage before the weights."""
    from grader.mistakes import ppo_step_stages

    hidden, payload, want = setting
    module = _module((REPO / "solutions" / "ex7_ppo_step.py").read_text())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = step_trace.validate_result(run_ppo_step(module, dict(payload)))
    assert hidden.compare.params_close(got["state_dict"], want["state_dict"], atol=hidden.PARAM_ATOL)
    assert ppo_step_stages.first_departing_stage(got, want) == "ppo_step_stage_weights"
