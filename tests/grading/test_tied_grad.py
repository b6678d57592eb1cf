"""The shared-leaf gradient (`grader.hidden.tied`, the child's `ppo_course.sandbox.tied_grad`).

"No gradient into the constants" is decided in the parent from a value: every float input hangs on one
leaf θ and the child's dL/dθ is compared with the reference's, the constants' paths detached. These tests
check, through `ppo-course check`'s `LocalModule` (which runs the same runner as the sandbox's child):

* the expected answer is the chain rule, computed independently: Mᵀ·(∂loss/∂logp_new) for a loss (the
  reference's per-argument gradient, `grader.hidden.calls.reference_grads`), Σ Pᵀ·out for outputs that must
  carry no gradient (the reference's values); it is non-zero, so a reply of "no gradient" fails;
* the reference's own functions pass, and so does a hand-written correct loss;
* a loss that lets gradient into the advantages, a GAE whose outputs keep the values' graph and shaped
  rewards that keep the scores' graph fail by far more than the tolerance, named with the constant that
  leaked (the scores are not called "advantages"); a wrong value without a leak is not named a leak.
"""

from __future__ import annotations

import types

import pytest
import torch

import ppo_reference
from grader.hidden.calls import reference_grads
from grader.hidden.tied import expect_tied_grad, reference_tied_grad, tie_plan
from ppo_course.check_support.local import LocalModule
from ppo_course.grading_kit.feedback import Mismatch

G = torch.Generator().manual_seed(7)
MASK = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]], dtype=torch.bool)


def _ex2_args():
    logp_old = -torch.rand(2, 4, generator=G, dtype=torch.float64) - 0.1
    logp_new = logp_old + 0.3 * torch.randn(2, 4, generator=G, dtype=torch.float64)
    advantages = torch.randn(2, 4, generator=G, dtype=torch.float64)
    return logp_new, logp_old, advantages, MASK


def _ex2_tie(args):
    return tie_plan("tests.tied.ex2", dict(zip(("logp_new", "logp_old", "advantages"), args[:3])),
                    [(None, (1,), False)])


def _leaky_surrogate(logp_new, logp_old, advantages, mask, clip_eps=0.2):
    """Eq. 5.1 with nothing detached (the catalogue's ex2_clipped_loss__gradient_into_advantages)."""
    m = mask.to(logp_new.dtype)
    ratio = torch.exp(logp_new - logp_old)
    obj = torch.min(ratio * advantages, torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * advantages)
    return -(obj * m).sum() / m.sum()


def _detached_surrogate(logp_new, logp_old, advantages, mask, clip_eps=0.2):
    return _leaky_surrogate(logp_new, logp_old.detach(), advantages.detach(), mask, clip_eps)


def _student(**functions) -> LocalModule:
    return LocalModule(types.SimpleNamespace(**functions))


def test_loss_expected_answer_is_the_chain_rule_and_nonzero():
    args = _ex2_args()
    tie = _ex2_tie(args)
    want = reference_tied_grad(ppo_reference, "clipped_surrogate_loss", args, {}, tie,
                               ("logp_old", "advantages"))
    per_arg = reference_grads(ppo_reference, "clipped_surrogate_loss", args, {}, ("logp_new",))["logp_new"]
    chain = tie["maps"]["logp_new"].T @ per_arg.reshape(-1)
    torch.testing.assert_close(want, chain, rtol=1e-12, atol=1e-14)
    assert want.abs().max() > 1e-2  # a reply of "no gradient" (zeros) fails


def test_correct_loss_passes_leaky_loss_fails_naming_the_advantages():
    args = _ex2_args()
    tie = _ex2_tie(args)
    for correct in (ppo_reference.clipped_surrogate_loss, _detached_surrogate):
        expect_tied_grad(_student(clipped_surrogate_loss=correct), ppo_reference, "clipped_surrogate_loss", args,
                         {}, tie, constants=("logp_old", "advantages"), diagnosis="gradient_into_constants",
                         what="clipped_surrogate_loss(...)")
    leaky = _student(clipped_surrogate_loss=_leaky_surrogate)
    _, got = leaky.call_with_grad("clipped_surrogate_loss", args, {}, tie=tie)
    want = reference_tied_grad(ppo_reference, "clipped_surrogate_loss", args, {}, tie, ("logp_old", "advantages"))
    assert (got["theta"] - want).abs().max() > 1e-3  # the leak's term, far above the 1e-9 tolerance
    with pytest.raises(Mismatch) as caught:
        expect_tied_grad(leaky, ppo_reference, "clipped_surrogate_loss", args, {}, tie,
                         constants=("advantages", "logp_old"), diagnosis="gradient_into_constants",
                         what="clipped_surrogate_loss(...)")
    assert caught.value.diagnosis == "gradient_into_constants"
    assert "`advantages`" in caught.value.detail


def _gae_case():
    rewards = torch.randn(2, 4, generator=G, dtype=torch.float64)
    values = torch.randn(2, 4, generator=G, dtype=torch.float64)
    tie = tie_plan("tests.tied.ex4", {"rewards": rewards, "values": values},
                   [(0, (2, 4), True), (1, (2, 4), True)], head_mask=MASK)
    return (rewards, values, MASK), tie


def test_outputs_without_gradient_expect_their_values():
    args, tie = _gae_case()
    want = reference_tied_grad(ppo_reference, "compute_gae", args, {"gamma": 1.0, "lam": 0.95}, tie,
                               ("rewards", "values"))
    adv, ret = ppo_reference.compute_gae(*args)
    (_, p0, _), (_, p1, _) = tie["heads"]
    by_hand = p0.T @ adv.reshape(-1) + p1.T @ ret.reshape(-1)
    torch.testing.assert_close(want, by_hand, rtol=1e-12, atol=1e-14)
    assert want.abs().max() > 1e-2


def test_gae_keeping_the_graph_is_named_and_a_wrong_value_is_not():
    args, tie = _gae_case()

    def keeps_graph(rewards, values, mask, gamma=1.0, lam=0.95):
        with torch.no_grad():
            adv, ret = ppo_reference.compute_gae(rewards, values, mask, gamma, lam)
        return adv + 0 * values, ret + values - values.detach()  # right values, the values' graph kept

    def wrong_value(rewards, values, mask, gamma=1.0, lam=0.95):
        adv, ret = ppo_reference.compute_gae(rewards, values, mask, gamma, lam)
        return adv * 1.1, ret

    check = dict(constants=("rewards", "values"), diagnosis="gae_not_detached", what="compute_gae(...)")
    expect_tied_grad(_student(compute_gae=ppo_reference.compute_gae), ppo_reference, "compute_gae", args, {}, tie,
                     **check)
    with pytest.raises(Mismatch) as caught:
        expect_tied_grad(_student(compute_gae=keeps_graph), ppo_reference, "compute_gae", args, {}, tie, **check)
    assert caught.value.diagnosis == "gae_not_detached" and "`values`" in caught.value.detail
    with pytest.raises(Mismatch) as caught:
        expect_tied_grad(_student(compute_gae=wrong_value), ppo_reference, "compute_gae", args, {}, tie, **check)
    assert caught.value.diagnosis != "gae_not_detached"


def test_scores_keeping_their_graph_are_named_as_scores():
    logp = -torch.rand(2, 4, generator=G, dtype=torch.float64) - 1.0
    ref_logp = -torch.rand(2, 4, generator=G, dtype=torch.float64) - 1.0
    scores = torch.randn(2, generator=G, dtype=torch.float64)
    of = {"scores": scores, "logp": logp, "ref_logp": ref_logp}
    tie = tie_plan("tests.tied.ex6", of, [(None, (2, 4), True)], head_mask=MASK)

    def scores_keep_graph(scores, logp, ref_logp, mask, kl_coef=0.05, placement="per_token"):
        out = ppo_reference.kl_shaped_rewards(scores, logp, ref_logp, mask, kl_coef, placement)
        last = mask.long().sum(1) - 1
        bump = torch.zeros_like(out).scatter(1, last[:, None], (scores - scores.detach())[:, None])
        return out + bump  # the same values, the scores' graph kept on the last real token

    with pytest.raises(Mismatch) as caught:
        expect_tied_grad(_student(kl_shaped_rewards=scores_keep_graph), ppo_reference, "kl_shaped_rewards",
                         (scores, logp, ref_logp, MASK), {}, tie, constants=tuple(of),
                         diagnosis="rewards_keep_gradient", what="kl_shaped_rewards(...)")
    assert caught.value.diagnosis == "rewards_keep_gradient" and "`scores`" in caught.value.detail
    from ppo_course.grading_kit.diagnoses import DIAGNOSES

    assert "advantages" not in DIAGNOSES["rewards_keep_gradient"]
