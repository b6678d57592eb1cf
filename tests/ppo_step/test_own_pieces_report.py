"""Exercise 7's own-pieces report blames the student's ex1-ex6 only when they change the step (issue 21, 12-13).

`test_ppo_step_with_own_pieces` (0 points) compares the step run with the student's
own ex1-ex6 against the same step with trusted ones. Adam normalises each
coordinate, so the rounding of two correct implementations of a piece can move a
coordinate whose gradient is about 0 by ~lr: parameters beyond PARAM_ATOL are
confirmed by the stages (rollout ... losses) and by the gradient norms before each
optimizer step of deep-mode runs (`grader.mistakes.ppo_step_stages.same_gradients`).
The hand traces below give the expected norms; the step runs use the solution's
step in the observer as the child's harness does. The catalogue checks the
end-to-end part (`tests/catalogue/test_catalogue.py::test_every_failing_test_names_the_mistake`:
`ex7_ppo_step__zero_grad_every_minibatch`, `ex7_ppo_step__minibatch_size_times_accumulation`).
"""

from __future__ import annotations

import math
import sys
import types
import warnings
from pathlib import Path

import pytest
import torch

from grader.mistakes.ppo_step_stages import first_departing_stage, gradient_norms, same_gradients
from ppo_course.grading_kit import step_trace
from ppo_course.sandbox.harness import run_ppo_step

REPO = Path(__file__).resolve().parents[2]
SIBLINGS = ("ex1_ratio", "ex2_clipped_loss", "ex3_full_loss", "ex4_gae", "ex5_rollout_buffer", "ex6_kl_reward")


def _trace(*events):
    return {"trace": [dict(e) for e in events]}


def test_gradient_norms_read_the_norm_before_clipping():
    # Clipped step: the clip's total_norm (3.0), not the clipped 1.0; an unclipped step: its own grad_norm.
    t = _trace({"ev": "clip", "max_norm": 1.0, "total_norm": 3.0}, {"ev": "step", "grad_norm": 1.0},
               {"ev": "zero_grad"}, {"ev": "step", "grad_norm": 0.5})
    assert gradient_norms(t["trace"]) == [3.0, 0.5]
    assert gradient_norms(None) is None
    assert gradient_norms([{"ev": "step", "grad_norm": "1"}]) is None


def test_same_gradients_needs_the_same_steps_and_norms():
    a = _trace({"ev": "clip", "max_norm": 1.0, "total_norm": 3.0}, {"ev": "step", "grad_norm": 1.0})
    # 3 + 1e-6: rounding (ATOL + RTOL·3 = 4e-4); 3.01: a different gradient; clipped 1.0 alone: not enough.
    assert same_gradients(a, _trace({"ev": "clip", "max_norm": 1.0, "total_norm": 3.000001},
                                    {"ev": "step", "grad_norm": 1.0}))
    assert not same_gradients(a, _trace({"ev": "clip", "max_norm": 1.0, "total_norm": 3.01},
                                        {"ev": "step", "grad_norm": 1.0}))
    assert not same_gradients(a, _trace({"ev": "clip", "max_norm": 1.0, "total_norm": math.nan},
                                        {"ev": "step", "grad_norm": 1.0}))
    assert not same_gradients(a, _trace({"ev": "step", "grad_norm": 3.0}, {"ev": "step", "grad_norm": 3.0}))
    assert not same_gradients(a, {"trace": None}) and not same_gradients(_trace(), _trace())


@pytest.fixture()
def solution_step(monkeypatch):
    """The solution's step, its `import ex1_ratio` ... served by the solutions' ex1-ex6 (fresh imports)."""
    for stem in SIBLINGS:
        monkeypatch.delitem(sys.modules, stem, raising=False)
    monkeypatch.syspath_prepend(str(REPO / "solutions"))
    module = types.ModuleType("ex7_own_pieces")
    exec(compile((REPO / "solutions" / "ex7_ppo_step.py").read_text(), "ex7_own_pieces.py", "exec"), module.__dict__)
    return module


@pytest.mark.slow
def test_a_gradient_only_change_of_a_piece_is_seen(solution_step, monkeypatch):
    """A piece whose loss VALUE is right but whose gradient is not (ppo_loss on a detached logp_new: the
    policy gradient is lost, Book §5.3) is caught by the gradient norms from the first optimizer step on."""
    from grader.hidden import test_ex7_ppo_step as hidden

    torch.set_num_threads(1)
    payload = dict(hidden.make_payload(seed=5, batch=8, ref_noise=hidden.REF_NOISE, **hidden.DEFAULT_CONFIG),
                   observe="deep")

    def run() -> dict:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return step_trace.validate_result(run_ppo_step(solution_step, dict(payload)))

    base, again = run(), run()
    assert same_gradients(base, again)  # the same step twice: the same gradients
    pieces = sys.modules["ex3_full_loss"]
    original = pieces.ppo_loss
    monkeypatch.setattr(pieces, "ppo_loss", lambda logp_new, *a, **k: original(logp_new.detach(), *a, **k))
    detached = run()
    assert not same_gradients(detached, base)
    # Already at the first optimizer step, whose mini-batches' loss values are still the same: later losses
    # differ too (the weights moved differently), which the stage walk sees as well.
    losses = [[e["loss"] for e in r["trace"] if e["ev"] == "loss"] for r in (detached, base)]
    gas = payload["ppo_config"]["gradient_accumulation_steps"]
    assert losses[0][:gas] == pytest.approx(losses[1][:gas], rel=1e-6)
    assert gradient_norms(detached["trace"])[0] != pytest.approx(gradient_norms(base["trace"])[0], rel=1e-3)
    assert first_departing_stage(detached, base) == "ppo_step_stage_losses"
