"""The reference against TRL 0.11.4, an independent implementation, with every convention difference mapped.

TRL is a hard test dependency (pyproject's ``test`` extra): a missing TRL is an
error here, never a silent skip. Its ``PPOTrainer`` methods are called unbound
on a ``types.SimpleNamespace`` standing in for ``self``; they read only
``self.config`` (gamma, lam, whiten_rewards, cliprange, cliprange_value,
vf_coef, ratio_threshold, kl_penalty), ``self.kl_ctl.value`` and
``self._kl_penalty``.

Convention map (TRL 0.11.4 → the contract):
* ``compute_rewards`` leaves −β·kl on padding; ours is 0 there → compare real tokens.
* ``compute_advantages`` multiplies values and rewards by the mask (V = 0 past
  the end, as ours), optionally whitens rewards with ``shift_mean=False``, and
  whitens the advantages itself → ours is ``whiten(compute_gae(...)[0])``.
  With ``whiten_rewards=True`` TRL does not re-mask after whitening, so
  padding holds (0 − μ)/σ + μ ≠ 0 and leaks into the advantages of padded rows
  (a TRL 0.11 bug; the contract keeps A = 0 past the last real token) → there
  only rows without padding are compared.
* ``loss`` returns (pg_loss, vf_coef·½·max(...), stats): our value loss has no
  ½ and is not multiplied by vf_coef; TRL's total has no entropy term (ours
  subtracts ent_coef·H); TRL zeroes the losses when the mean ratio exceeds
  ``ratio_threshold`` (10), which we never do.
* ``trl.core.masked_var`` of one element is NaN (n/(n−1) = 1/0); ours raises.
* ``trl.core.entropy_from_logits`` returns the unmasked [B, T] entropies; ours
  is already the masked mean.
"""

import types
import warnings

import numpy as np
import pytest
import torch
import trl.core as trl_core
from hypothesis import given
from hypothesis import strategies as st
from ref_inputs import REFERENCE_SETTINGS, rollouts
from trl.trainer.ppo_trainer import PPOTrainer
from trl.trainer.utils import AdaptiveKLController as TRLAdaptiveKLController

import ppo_reference as R

F32, F64 = torch.float32, torch.float64
dtypes = st.sampled_from([F32, F64])


def close(dtype, bessel=False):
    """Tolerances for comparing with TRL.

    float32: TRL accumulates in float32 and whitens by a float32 σ, ours takes
    statistics in float64, so results differ by a few float32 ulps of values of
    size ≤ ~5 → 2e-5 absolute. float64: agreement to rounding (1e-10), except
    where TRL's Bessel factor n/(n − 1) enters (``bessel=True``): TRL divides
    two integer mask sums, which torch does in the default float32, so its
    variance carries a relative error up to 6e-8 → rtol 2e-7.
    """
    if dtype == F32:
        return dict(rtol=1e-5, atol=2e-5)
    return dict(rtol=2e-7, atol=1e-10) if bessel else dict(rtol=1e-10, atol=1e-10)


def same(ours, theirs, dtype, bessel=False):
    """``ours`` has the data dtype and matches ``theirs``. TRL's output dtype can follow
    the mask (a float64 mask promotes float32 data); the contract's follows the data."""
    assert ours.dtype == dtype
    torch.testing.assert_close(ours, theirs.to(dtype), **close(dtype, bessel))


def trl_self(**config):
    """A stand-in for ``self`` of PPOTrainer with the attributes its methods read."""
    defaults = dict(kl_penalty="kl", gamma=1.0, lam=0.95, whiten_rewards=False, cliprange=0.2,
                    cliprange_value=0.2, vf_coef=0.1, ratio_threshold=10.0)
    defaults.update(config)
    ns = types.SimpleNamespace(config=types.SimpleNamespace(**defaults), kl_ctl=types.SimpleNamespace(value=0.05))
    ns._kl_penalty = lambda logprob, ref_logprob: PPOTrainer._kl_penalty(ns, logprob, ref_logprob)
    return ns


def assert_real_close(ours, theirs, mask, dtype, bessel=False):
    m = mask.bool()
    same(ours[m], theirs[m], dtype, bessel)


# --------------------------------------------------------------------------- trl.core helpers


@REFERENCE_SETTINGS
@given(rollout=rollouts(min_real=2), dtype=dtypes, shift_mean=st.booleans())
def test_masked_helpers_match_trl_core(rollout, dtype, shift_mean):
    (x,) = rollout.data(1, scale=2.0, dtype=dtype)
    mask = rollout.mask()
    same(R.masked_mean(x, mask), trl_core.masked_mean(x, mask), dtype)
    same(R.masked_mean(x, mask, dim=1), trl_core.masked_mean(x, mask, axis=1), dtype)
    for unbiased in (True, False):
        same(R.masked_var(x, mask, unbiased), trl_core.masked_var(x, mask, unbiased), dtype, bessel=True)
    theirs = trl_core.masked_whiten(x, mask, shift_mean)
    assert_real_close(R.masked_whiten(x, mask, shift_mean), theirs, mask, dtype, bessel=True)
    assert_real_close(R.whiten(x, mask, shift_mean), theirs, mask, dtype, bessel=True)


def test_masked_var_of_one_element_nan_in_trl_error_here():
    x, one = torch.tensor([[3.0, 7.0]]), torch.tensor([[1, 0]])
    assert torch.isnan(trl_core.masked_var(x, one))  # TRL: 0 · 1/0 = NaN
    with pytest.raises(ValueError, match="at least 2"):
        R.masked_var(x, one)


@REFERENCE_SETTINGS
@given(rollout=rollouts(), dtype=dtypes, vocab=st.integers(2, 8))
def test_logprobs_and_entropy_match_trl_core(rollout, dtype, vocab):
    (logits,) = rollout.data(1, scale=5.0, dtype=dtype, vocab=vocab)
    tokens = torch.randint(0, vocab, (rollout.batch, rollout.resp_len), generator=torch.Generator().manual_seed(rollout.seed))
    mask = rollout.mask()
    # Both compute every position, padding included.
    same(R.logprobs_from_logits(logits, tokens), trl_core.logprobs_from_logits(logits, tokens), dtype)
    # TRL returns [B, T] unmasked; the contract's entropy is its masked mean.
    theirs = trl_core.masked_mean(trl_core.entropy_from_logits(logits), mask)
    same(R.entropy_from_logits(logits, mask), theirs, dtype)


def test_adaptive_kl_controller_matches_trl():
    ours = R.AdaptiveKLController(init_kl_coef=0.2, target=3.0, horizon=500)
    theirs = TRLAdaptiveKLController(0.2, 3.0, 500)
    for current, n in [(10.0, 64), (3.3, 64), (0.5, 32), (2.9, 7), (3.0, 100), (-1.0, 64)]:
        ours.update(current, n)
        theirs.update(current, n)
        assert ours.value == pytest.approx(float(theirs.value), rel=1e-15)


# --------------------------------------------------------------------------- PPOTrainer methods


@REFERENCE_SETTINGS
@given(rollout=rollouts(), dtype=dtypes, kl_coef=st.sampled_from([0.0, 0.03, 0.2]))
def test_per_token_rewards_match_trl_compute_rewards(rollout, dtype, kl_coef):
    logp, ref_logp = rollout.data(2, dtype=dtype)
    scores = torch.randn(rollout.batch, generator=torch.Generator().manual_seed(rollout.seed)).to(dtype)
    mask = rollout.mask()
    ns = trl_self()
    ns.kl_ctl.value = kl_coef
    rewards, _, kls = PPOTrainer.compute_rewards(ns, scores, logp, ref_logp, mask)
    ours = R.kl_shaped_rewards(scores, logp, ref_logp, mask, kl_coef=kl_coef, placement="per_token")
    assert_real_close(ours, rewards, mask, dtype)  # TRL leaves −β·kl on padding; ours is 0 there
    assert_real_close(R.per_token_kl(logp, ref_logp, mask), kls, mask, dtype)


@REFERENCE_SETTINGS
@given(rollout=rollouts(min_real=2), dtype=dtypes, whiten_rewards=st.booleans(),
       gamma=st.sampled_from([1.0, 0.9]), lam=st.sampled_from([0.95, 0.8, 1.0]))
def test_gae_and_whitening_match_trl_compute_advantages(rollout, dtype, whiten_rewards, gamma, lam):
    rewards, values = rollout.data(2, dtype=dtype)
    mask = rollout.mask()
    ns = trl_self(gamma=gamma, lam=lam, whiten_rewards=whiten_rewards)
    # TRL multiplies by the mask, so give it a float mask of the data dtype (a bool mask
    # multiplies just the same; an int mask too).
    _, trl_adv, trl_ret = PPOTrainer.compute_advantages(ns, values, rewards, mask.to(dtype))
    # The contract's pipeline (ARCHITECTURE.md, ppo_step steps 4–5).
    shaped = R.whiten(rewards, mask, shift_mean=False) if whiten_rewards else rewards
    adv, ret = R.compute_gae(shaped, values, mask, gamma=gamma, lam=lam)
    if not whiten_rewards:
        assert_real_close(R.whiten(adv, mask), trl_adv, mask, dtype, bessel=True)
        assert_real_close(ret, trl_ret, mask, dtype)
    else:
        # TRL's whitened padding rewards leak into padded rows (module docstring), and through
        # them into the whitening statistics of every row; compare rows without padding,
        # before TRL's advantage whitening (its returns − masked values).
        full_rows = mask.bool() & mask.bool().all(dim=1, keepdim=True)
        assert_real_close(adv, trl_ret - values * mask.to(dtype), full_rows, dtype, bessel=True)
        assert_real_close(ret, trl_ret, full_rows, dtype, bessel=True)


def test_trl_whiten_rewards_leaks_padding_into_advantages_and_we_do_not():
    # One row, 2 real tokens + 1 padding, γ = λ = 1, V = 0: rewards (1, 3) → mean 2, σ² = 2.
    # TRL: masked rewards (1, 3, 0) → whitened, mean kept: (1, 3, 0 − 2)/√2 + 2 ≈ (1.29, 2.71, 0.59);
    # GAE then sums the padding's 0.59 into A_0 and A_1. Ours: padding is outside the response.
    rewards = torch.tensor([[1.0, 3.0, 0.0]], dtype=F64)
    values = torch.zeros(1, 3, dtype=F64)
    mask = torch.tensor([[1, 1, 0]])
    _, _, trl_ret = PPOTrainer.compute_advantages(trl_self(gamma=1.0, lam=1.0, whiten_rewards=True),
                                                  values, rewards, mask.to(F64))
    shaped = R.whiten(rewards, mask, shift_mean=False)
    _, ret = R.compute_gae(shaped, values, mask, gamma=1.0, lam=1.0)
    padding_reward = (0.0 - 2.0) / np.sqrt(2.0 + 1e-8) + 2.0
    torch.testing.assert_close(trl_ret[0, :2] - ret[0, :2], torch.full((2,), padding_reward, dtype=F64))


@REFERENCE_SETTINGS
@given(rollout=rollouts(), dtype=dtypes, cliprange=st.sampled_from([0.1, 0.2, 0.3]),
       cliprange_value=st.sampled_from([0.05, 0.2, 0.5]), vf_coef=st.sampled_from([0.1, 0.5]),
       ent_coef=st.sampled_from([0.0, 0.01, 0.1]))
def test_losses_and_stats_match_trl_loss(rollout, dtype, cliprange, cliprange_value, vf_coef, ent_coef):
    logp_old, values_old, advantages, returns = rollout.data(4, dtype=dtype)
    noise_lp, noise_v = rollout.data(2, scale=0.3, dtype=dtype, junk_seed=1)
    logp_new, vpreds = logp_old + noise_lp, values_old + noise_v  # ratios around 1, some clipped
    (logits,) = rollout.data(1, scale=2.0, dtype=dtype, vocab=5)
    mask = rollout.mask()
    # ratio_threshold very high: TRL would otherwise zero a batch whose mean ratio > 10 (see below).
    ns = trl_self(cliprange=cliprange, cliprange_value=cliprange_value, vf_coef=vf_coef, ratio_threshold=1e30)
    pg_loss, vf_term, stats = PPOTrainer.loss(ns, logp_old, values_old, logits, vpreds, logp_new, mask,
                                              advantages, returns)
    same(R.clipped_surrogate_loss(logp_new, logp_old, advantages, mask, cliprange), pg_loss, dtype)
    # TRL's value term is vf_coef · ½ · max(...); ours is max(...) alone.
    ours_value = R.clipped_value_loss(vpreds, values_old, returns, mask, cliprange_value)
    same(vf_coef * 0.5 * ours_value, vf_term, dtype)
    loss, ours_stats = R.ppo_loss(logp_new, logp_old, advantages, vpreds, values_old, returns, logits, mask,
                                  clip_eps=cliprange, clip_range_value=cliprange_value, vf_coef=vf_coef,
                                  ent_coef=ent_coef)
    # Our total = pg + vf_coef·(2 · TRL's ½-value) − ent_coef·H; TRL's total has no entropy term.
    want_total = pg_loss + 2 * vf_term - ent_coef * stats["policy/entropy"]
    same(loss, want_total, dtype)
    tol = dict(rel=1e-5, abs=2e-5) if dtype == F32 else dict(rel=1e-10, abs=1e-10)
    # TRL's clip fractions are means of ``.float()`` indicators: float32 whatever the data.
    frac_tol = dict(rel=1e-6, abs=1e-7)
    assert ours_stats["approx_kl"] == pytest.approx(float(stats["policy/approxkl"]), **tol)
    assert ours_stats["policykl"] == pytest.approx(float(stats["policy/policykl"]), **tol)
    assert ours_stats["clipfrac"] == pytest.approx(float(stats["policy/clipfrac"]), **frac_tol)
    assert ours_stats["vf_clipfrac"] == pytest.approx(float(stats["val/clipfrac"]), **frac_tol)
    assert ours_stats["entropy"] == pytest.approx(float(stats["policy/entropy"]), **tol)
    assert ours_stats["policy_loss"] == pytest.approx(float(stats["loss/policy"]), **tol)
    assert ours_stats["value_loss"] == pytest.approx(2 * float(stats["loss/value"]), **tol)
    m = mask.bool()
    assert ours_stats["ratio_mean"] == pytest.approx(float(stats["policy/ratio"][m].double().mean()), **tol)


def test_trl_zeroes_a_batch_above_ratio_threshold_and_we_do_not():
    # Mean ratio e^3 ≈ 20 > 10: TRL warns and multiplies its losses by 0; the contract's loss is the formula.
    logp_old = torch.zeros(1, 2, dtype=F64)
    logp_new = torch.full((1, 2), 3.0, dtype=F64)
    adv = torch.tensor([[-1.0, -1.0]], dtype=F64)
    zeros, mask = torch.zeros(1, 2, dtype=F64), torch.ones(1, 2)
    logits = torch.zeros(1, 2, 3, dtype=F64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        pg_loss, _, _ = PPOTrainer.loss(trl_self(), logp_old, zeros, logits, zeros, logp_new, mask, adv, zeros)
    assert pg_loss.item() == 0.0
    # Ours: Â < 0, r = e³ > 1−ε → min(−e³, −1.2) = −e³ → loss = e³.
    ours = R.clipped_surrogate_loss(logp_new, logp_old, adv, mask)
    assert ours.item() == pytest.approx(float(np.exp(3.0)), rel=1e-12)
