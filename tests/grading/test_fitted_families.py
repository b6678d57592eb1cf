"""Parametrised mistake families fitted on the failing input, and the always-true "where" sentence.

Hand-made student functions with a known wrong parameter must be named with that parameter (within
tolerance); a function wrong in a way no family models gets no name and a "where" sentence that is
true of its actual difference (checked against positions worked out by hand).
"""

from __future__ import annotations

import types

import pytest
import torch

import ppo_reference as R
from grader.hidden import support
from grader.hidden.evidence import explain_unnamed
from grader.mistakes import fit
from grader.mistakes.families import FAMILIES
from ppo_course.grading_kit.feedback import Mismatch
from ppo_course.grading_kit.where import where_they_differ

B, T = 3, 6
LENGTHS = (6, 2, 4)


def _data():
    g = torch.Generator().manual_seed(7)
    m = torch.arange(T)[None, :] < torch.tensor(LENGTHS)[:, None]
    logp_old = -torch.rand(B, T, generator=g, dtype=torch.float64) - 0.1
    logp_new = logp_old + torch.randn(B, T, generator=g, dtype=torch.float64) * 0.4
    adv = torch.randn(B, T, generator=g, dtype=torch.float64)
    x = torch.randn(B, T, generator=g, dtype=torch.float64)
    y = torch.randn(B, T, generator=g, dtype=torch.float64)
    scores = torch.randn(B, generator=g, dtype=torch.float64)
    logits = torch.randn(B, T, 5, generator=g, dtype=torch.float64)
    return types.SimpleNamespace(m=m, logp_old=logp_old, logp_new=logp_new, adv=adv, x=x, y=y, scores=scores,
                                 logits=logits)


D = _data()


def _explain(name, student_fn, args, kwargs=None, index=None, mask=None):
    """explain_unnamed on the student's function called in-process (the provider's proxy stand-in)."""
    kwargs = kwargs or {}
    pick = (lambda o: o) if index is None else (lambda o: o[index])
    student = types.SimpleNamespace(**{name: student_fn})
    got = pick(student_fn(*args, **kwargs))
    want = pick(getattr(R, name)(*args, **kwargs))
    return explain_unnamed("wrong_value", student, name, got, want, args, kwargs, pick, pick, 1e-9, 1e-9, mask)[:2]


def _fitted_param(name, student_fn, args, kwargs, index=None, mask=None):
    """The parameter of the one family `fit` names (through `fit.explain` directly)."""
    pick = (lambda o: o) if index is None else (lambda o: o[index])
    a = fit.bind(name, args, kwargs)
    got, want = pick(student_fn(*args, **kwargs)), pick(getattr(R, name)(*args, **kwargs))
    named = fit.explain(name, a, got, want, pick, mask, 1e-9, 1e-9, lambda: None)
    assert named is None  # without a probe nothing is named (the evidence rule)
    hits = [(f, fit.fit_family(f, a, got, pick, mask, 1e-9, 1e-9)) for f in FAMILIES[name]]
    return [p for f, ps in hits for p in ps]


def _surrogate(lo, hi, reduce="mean"):
    def clipped_surrogate_loss(logp_new, logp_old, advantages, mask, clip_eps=0.2):
        m = mask.to(torch.bool)
        r = torch.exp(logp_new - logp_old)
        terms = -torch.minimum(r * advantages, torch.clamp(r, lo(clip_eps), hi(clip_eps)) * advantages)
        total = torch.where(m, terms, torch.zeros(()))
        return total.sum() if reduce == "sum" else total.sum() / m.sum()
    return clipped_surrogate_loss


def test_clip_upper_bound_is_fitted():
    """clip(r, 1 − ε, 1.28) with ε = 0.2: the upper bound 1.28 is recovered and named in the sentence."""
    student = _surrogate(lambda e: 1 - e, lambda e: 1.28)
    args = (D.logp_new, D.logp_old, D.adv, D.m)
    params = _fitted_param("clipped_surrogate_loss", student, args, {"clip_eps": 0.2})
    assert any(isinstance(p, float) and abs(p - 1.28) < 1e-6 for p in params)
    diagnosis, finding = _explain("clipped_surrogate_loss", student, args, {"clip_eps": 0.2})
    assert diagnosis == "wrong_clip_bounds"
    assert "upper clip bound is 1.28" in finding and "[0.8, 1.28]" in finding and "[0.8, 1.2]" in finding


def test_clip_lower_bound_is_fitted():
    """clip(r, 0.75, 1 + ε) with ε = 0.2: the lower bound 0.75 is recovered."""
    student = _surrogate(lambda e: 0.75, lambda e: 1 + e)
    diagnosis, finding = _explain("clipped_surrogate_loss", student, (D.logp_new, D.logp_old, D.adv, D.m),
                                  {"clip_eps": 0.2})
    assert (diagnosis, "[0.75, 1.2]" in finding) == ("wrong_clip_bounds", True)


def test_sum_reduction_is_named():
    """The per-token terms summed, never divided by the token count: `wrong_reduction`."""
    student = _surrogate(lambda e: 1 - e, lambda e: 1 + e, reduce="sum")
    diagnosis, finding = _explain("clipped_surrogate_loss", student, (D.logp_new, D.logp_old, D.adv, D.m),
                                  {"clip_eps": 0.2})
    assert diagnosis == "wrong_reduction" and "sum over the real tokens" in finding


def test_gamma_is_fitted():
    """γ = 0.99 hard-coded where the call passes γ = 0.9: fitted to 0.99 (bisection to < 1e-9)."""
    def compute_gae(rewards, values, mask, gamma=1.0, lam=0.95):
        return R.compute_gae(rewards, values, mask, gamma=0.99, lam=lam)
    args = (D.x, D.y, D.m)
    params = _fitted_param("compute_gae", compute_gae, args, {"gamma": 0.9}, index=0, mask=D.m)
    assert any(isinstance(p, float) and abs(p - 0.99) < 1e-6 for p in params)
    diagnosis, finding = _explain("compute_gae", compute_gae, args, {"gamma": 0.9}, index=0, mask=D.m)
    assert diagnosis == "hyperparameter_value_wrong"
    assert "= 0.99 is used where the call passed γ (gamma) = 0.9" in finding


@pytest.mark.parametrize(("gamma", "named"), [(0.41, True), (0.4137, False)])
def test_a_fitted_value_is_named_only_at_a_round_number(gamma, named):
    """γ hard-coded to 0.41 is named with its value; 0.4137 (an arbitrary number a submission could carry out of
    the sandbox through the feedback) reproduces the output just as well but is not named."""
    def compute_gae(rewards, values, mask, gamma_=1.0, lam=0.95):
        return R.compute_gae(rewards, values, mask, gamma=gamma, lam=lam)

    diagnosis, finding = _explain("compute_gae", compute_gae, (D.x, D.y, D.m), {"lam": 0.95}, index=0, mask=D.m)
    assert (diagnosis == "hyperparameter_value_wrong") is named, (diagnosis, finding)
    assert ("0.41" in finding) is named and "0.4137" not in finding


def test_lambda_at_its_default_keeps_the_catalogue_name():
    """λ passed as 0.8 but the default 0.95 used: the fit lands on the default, `ignores_hyperparameter`."""
    def compute_gae(rewards, values, mask, gamma=1.0, lam=0.95):
        return R.compute_gae(rewards, values, mask, gamma=gamma)
    diagnosis, finding = _explain("compute_gae", compute_gae, (D.x, D.y, D.m), {"lam": 0.8}, index=0, mask=D.m)
    assert diagnosis == "ignores_hyperparameter" and "0.95" in finding


def test_gae_without_bootstrap_is_named():
    """δ_t = r_t − V_t (no γ·V_{t+1}): `gae_no_bootstrap`."""
    def compute_gae(rewards, values, mask, gamma=1.0, lam=0.95):
        m = mask.to(torch.bool)
        r, v = torch.where(m, rewards, 0.0), torch.where(m, values, 0.0)
        adv, carry = torch.zeros_like(r), torch.zeros(r.shape[0], dtype=r.dtype)
        for t in range(r.shape[1] - 1, -1, -1):
            carry = r[:, t] - v[:, t] + gamma * lam * carry
            adv[:, t] = carry
        return adv, adv + v
    assert _explain("compute_gae", compute_gae, (D.x, D.y, D.m), {"gamma": 0.9}, index=0,
                    mask=D.m)[0] == "gae_no_bootstrap"


def test_kl_coefficient_and_vf_coef_are_fitted():
    """β = 0.1 where 0.05 is passed (ex6) and vf_coef = 0.5 where 0.1 is passed (ex3)."""
    def kl_shaped_rewards(scores, logp, ref_logp, mask, kl_coef=0.05, placement="per_token"):
        return R.kl_shaped_rewards(scores, logp, ref_logp, mask, kl_coef=0.1, placement=placement)
    d, f = _explain("kl_shaped_rewards", kl_shaped_rewards, (D.scores, D.logp_new, D.logp_old, D.m), {"kl_coef": 0.05})
    assert (d, "= 0.1 is used" in f) == ("hyperparameter_value_wrong", True)

    def ppo_loss(*args, **kwargs):
        return R.ppo_loss(*args, **{**kwargs, "vf_coef": 0.5})
    args = (D.logp_new, D.logp_old, D.adv, D.x, D.y, D.y * 0.5, D.logits, D.m)
    d, f = _explain("ppo_loss", ppo_loss, args, {}, index=0)
    assert (d, "vf_coef = 0.5 is used where the call passed vf_coef = 0.1" in f) == ("hyperparameter_value_wrong", True)


@pytest.mark.parametrize("estimator, words", [
    (lambda lp, ref: 0.5 * (lp - ref) ** 2, "k2"),
    (lambda lp, ref: torch.exp(lp - ref) - (lp - ref) - 1, "(reversed)"),
])
def test_kl_estimator_is_named(estimator, words):
    """k2 and a reversed k3 are members of the estimator family: `kl_wrong_estimator`, the member named."""
    def per_token_kl(logp, ref_logp, mask):
        return torch.where(mask.to(torch.bool), estimator(logp, ref_logp), 0.0)
    d, f = _explain("per_token_kl", per_token_kl, (D.logp_new, D.logp_old, D.m))
    assert d == "kl_wrong_estimator" and words in f


def test_score_one_token_early_is_named():
    """last_token placement with the reward put one token before the last real one: `off_by_one_token`."""
    def kl_shaped_rewards(scores, logp, ref_logp, mask, kl_coef=0.05, placement="per_token"):
        out = R.kl_shaped_rewards(scores, logp, ref_logp, mask, kl_coef=kl_coef, placement=placement)
        last = mask.to(torch.bool).sum(1) - 1
        rows = torch.arange(out.shape[0])
        moved = torch.zeros_like(out)
        moved[rows, torch.clamp(last - 1, min=0)] = out[rows, last]
        return moved
    d, f = _explain("kl_shaped_rewards", kl_shaped_rewards, (D.scores, D.logp_new, D.logp_old, D.m),
                    {"placement": "last_token"})
    assert d == "off_by_one_token" and "before" in f


@pytest.mark.parametrize("clamped", [False, True])
def test_whiten_per_row_is_named(clamped):
    """Mean and variance per row instead of over the batch's real tokens: `whiten_per_row`, whether a one-token
    row's divisor n − 1 = 0 is kept (NaN there, as torch.var gives) or clamped to 1 (0 there)."""
    def whiten(x, mask, shift_mean=True):
        m = mask.to(torch.bool)
        n = m.sum(1, keepdim=True)
        mean = torch.where(m, x, 0.0).sum(1, keepdim=True) / n
        var = torch.where(m, (x - mean) ** 2, 0.0).sum(1, keepdim=True) / ((n - 1).clamp(min=1) if clamped else n - 1)
        out = (x - mean) / torch.sqrt(var + 1e-8)
        return out if shift_mean else out + mean
    m = torch.arange(T)[None, :] < torch.tensor((6, 3, 4))[:, None]  # ≥ 2 real tokens per row (a variance)
    assert _explain("whiten", whiten, (D.x, m), {}, mask=m)[0] == "whiten_per_row"


def test_a_bound_the_input_cannot_pin_gets_no_name():
    """clip(r, 1 − ε, 50): every upper bound above the largest ratio fits; no parameter, so no name."""
    student = _surrogate(lambda e: 1 - e, lambda e: 50.0)
    diagnosis, _ = _explain("clipped_surrogate_loss", student, (D.logp_new, D.logp_old, D.adv, D.m),
                            {"clip_eps": 0.2})
    assert diagnosis == "wrong_value"


def test_a_mistake_outside_every_family_gets_no_name_and_a_true_where():
    """The KL zeroed at each row's last real token: no family; the sentence says exactly that (3 of 3 rows:
    every row has a last real token, at columns 5, 1, 3, where the KL is non-zero)."""
    def per_token_kl(logp, ref_logp, mask):
        out = R.per_token_kl(logp, ref_logp, mask).clone()
        out[torch.arange(out.shape[0]), mask.to(torch.bool).sum(1) - 1] = 0.0
        return out
    d, f = _explain("per_token_kl", per_token_kl, (D.logp_new, D.logp_old, D.m))
    assert d == "wrong_value"
    assert f == "the value differs only at the last real token of a row (3 of 3 rows), on an input of shape (3, 6)."


def test_hidden_compare_carries_the_fit_into_the_mismatch():
    """The hidden graders' compare raises the fitted name with its sentence as `finding` (hidden-safe)."""
    def compute_gae(rewards, values, mask, gamma=1.0, lam=0.95):
        return R.compute_gae(rewards, values, mask, gamma=0.99, lam=lam)
    student = types.SimpleNamespace(compute_gae=compute_gae)
    with pytest.raises(Mismatch) as caught:
        support.compare(student, R, "compute_gae", (D.x, D.y, D.m), {"gamma": 0.9}, rtol=1e-9, atol=1e-9, mask=D.m,
                        pick=support.part(0, "advantages"))
    assert caught.value.diagnosis == "hyperparameter_value_wrong" and "0.99" in caught.value.finding


def test_a_family_is_fitted_with_the_students_pick_where_the_variants_use_another():
    """ppo_loss's hidden tests compare the loss (``pick``: element 0 of (loss, stats)) while its buggy variants
    return the loss alone (``variant_pick``: the output itself); a family models the whole (loss, stats), so it is
    fitted with ``pick``. Through ``variant_pick`` it reproduced nothing and vf_coef = 0.5 went unnamed."""
    def ppo_loss(*args, **kwargs):
        return R.ppo_loss(*args, **{**kwargs, "vf_coef": 0.5})
    student = types.SimpleNamespace(ppo_loss=ppo_loss)
    args = (D.logp_new, D.logp_old, D.adv, D.x, D.y, D.y * 0.5, D.logits, D.m)
    with pytest.raises(Mismatch) as caught:
        support.compare(student, R, "ppo_loss", args, {}, rtol=1e-9, atol=1e-9, pick=lambda out: out[0],
                        variant_pick=lambda out: out)
    assert caught.value.diagnosis == "hyperparameter_value_wrong" and "vf_coef = 0.5 is used" in caught.value.finding


# --------------------------------------------------------------------------- where they differ
M = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]], dtype=torch.bool)
WANT = torch.tensor([[1.0, 2.0, 3.0, 0.0], [4.0, 5.0, 0.0, 0.0]], dtype=torch.float64)


def _got(*positions, by=1.0):
    got = WANT.clone()
    for i, j in positions:
        got[i, j] += by
    return got


def test_where_padding_only():
    """Differences at (0, 3) and (1, 2), both padding, compared (a '0 on padding' output)."""
    s = where_they_differ(_got((0, 3), (1, 2)), WANT, rtol=1e-9, atol=1e-9, structure=M)
    assert s == "the value differs only at padding positions (mask = 0), on an input of shape (2, 4)."


def test_where_negative_advantages():
    """Advantages negative at (0, 1) and (1, 0) only; the output differs exactly there."""
    adv = torch.tensor([[1.0, -1.0, 2.0, 0.0], [-3.0, 1.0, 0.0, 0.0]])
    s = where_they_differ(_got((0, 1), (1, 0)), WANT, rtol=1e-9, atol=1e-9, mask=M, structure=M, advantages=adv)
    assert "only at positions where the advantage is negative" in s


def test_where_one_row_and_a_count_never_a_false_location():
    """(0, 0) and (0, 2): one row (row 0), not the last token alone ((0, 2) is, (0, 0) is not)."""
    s = where_they_differ(_got((0, 0), (0, 2)), WANT, rtol=1e-9, atol=1e-9, mask=M, structure=M)
    assert "only in row 0 of 2" in s
    # (0, 1) and (1, 0): neither one row, nor the last or first token of every differing row: a count (2 of 5).
    s = where_they_differ(_got((0, 1), (1, 0)), WANT, rtol=1e-9, atol=1e-9, mask=M, structure=M)
    assert s == "the value differs at 2 of 5 compared positions, on an input of shape (2, 4)."


def test_where_a_scalar_says_only_that_it_differs():
    """A loss 1.25 times the expected one: "differs", and no ratio (got/expected = 1.25 told a submission that
    returned 1 the expected value; tests/hostile/test_hostile_attack9.py)."""
    s = where_they_differ(torch.tensor(2.5), torch.tensor(2.0), rtol=1e-9, atol=1e-9)
    assert s == "the value differs."


# --------------------------------------------------------------------------- the public tests' probe step
def _public_ex2():
    import importlib

    return importlib.import_module("ppo_course.public_tests.test_ex2_clipped_loss")


def _ignores_eps(logp_new, logp_old, advantages, mask, clip_eps=0.2):
    return R.clipped_surrogate_loss(logp_new, logp_old, advantages, mask)  # ε = 0.2 whatever is passed


def _constant(logp_new, logp_old, advantages, mask, clip_eps=0.2):
    return torch.tensor(-0.85, dtype=torch.float64)  # the ε = 0.2 answer of the hand case, on every input


@pytest.mark.parametrize("student_fn, named", [(_ignores_eps, "ignores_hyperparameter"), (_constant, "wrong_value")])
def test_public_probe_confirms_only_what_the_probe_shows(student_fn, named):
    """clip_eps ignored is confirmed on the public probe; a constant −0.85 (the hand case's ε = 0.2 answer,
    -0.85 by hand in test_surrogate_hand_case) matches `ignores_hyperparameter` on the hand case only."""
    module = _public_ex2()
    student = types.SimpleNamespace(clipped_surrogate_loss=student_fn)
    with pytest.raises(Mismatch) as caught:
        module.test_surrogate_uses_clip_eps(student)
    assert caught.value.diagnosis == named


def test_two_different_fits_in_one_exercise_name_nothing():
    """γ = 0.99 fitted on one test and γ = 0.95 on another of ex4: both become `wrong_value`, keeping their
    "where" line; a lone fit in ex2 and one claim twice in ex6 (whatever the calls passed) keep their names."""
    from grader.hidden.evidence import FITTED, one_story
    from ppo_course.grading_kit.collect import Outcome

    def failed(exercise, test, diagnosis, claim, where=""):
        return Outcome(exercise=exercise, kind="hidden", test=test, passed=False, diagnosis=diagnosis,
                       finding=f"{FITTED} {claim}." + (f"\n{where}" if where else ""), fitted=f"{diagnosis}: {claim}")

    g99 = "γ (gamma) = 0.99 is used"
    outcomes = {
        ("ex4_gae", "hidden", "a"): failed("ex4_gae", "a", "hyperparameter_value_wrong", g99,
                                           "the value differs at 3 of 4 compared positions."),
        ("ex4_gae", "hidden", "b"): failed("ex4_gae", "b", "hyperparameter_value_wrong", "γ (gamma) = 0.95 is used"),
        ("ex2_clipped_loss", "hidden", "c"): failed("ex2_clipped_loss", "c", "wrong_clip_bounds", "bound 1.28"),
        ("ex6_kl_reward", "hidden", "d"): failed("ex6_kl_reward", "d", "hyperparameter_value_wrong", "β = 0.1"),
        ("ex6_kl_reward", "hidden", "e"): failed("ex6_kl_reward", "e", "hyperparameter_value_wrong", "β = 0.1"),
    }
    one_story(outcomes)
    a, b, c, d, e = outcomes.values()
    assert (a.diagnosis, a.finding) == ("wrong_value", "the value differs at 3 of 4 compared positions.")
    assert (b.diagnosis, b.finding) == ("wrong_value", "")
    assert [x.diagnosis for x in (c, d, e)] == ["wrong_clip_bounds", *["hyperparameter_value_wrong"] * 2]
