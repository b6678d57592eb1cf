"""Numerical stability: huge logits, log-probs of −1000, near one-hot distributions, long rows."""

import math

import numpy as np
import pytest
import torch

import ppo_reference as R

F32, F64 = torch.float32, torch.float64


@pytest.mark.parametrize("dtype", [F32, F64])
def test_logprobs_of_logits_scaled_by_1e3_are_finite_and_right(dtype):
    gen = torch.Generator().manual_seed(0)
    logits64 = torch.randn(3, 4, 50, generator=gen, dtype=F64) * 1e3
    tokens = torch.randint(0, 50, (3, 4), generator=gen)
    got = R.logprobs_from_logits(logits64.to(dtype), tokens)
    assert torch.isfinite(got).all() and (got <= 0).all()
    # Independent: NumPy log-sum-exp with the max taken out, in float64.
    z = logits64.to(dtype).double().numpy()
    zmax = z.max(-1, keepdims=True)
    lse = (zmax + np.log(np.exp(z - zmax).sum(-1, keepdims=True)))[..., 0]
    want = np.take_along_axis(z, tokens.numpy()[..., None], -1)[..., 0] - lse
    # Values reach −1e4 and float32 keeps ~7 digits: an absolute error of ~1e-3 is rounding.
    np.testing.assert_allclose(got.double().numpy(), want, rtol=1e-6, atol=1e-3 if dtype == F32 else 1e-9)
    # The argmax token of each position gets log-prob ≈ 0 (its probability is ≈ 1).
    best = R.logprobs_from_logits(logits64.to(dtype), logits64.argmax(-1))
    assert torch.all(best > -1e-3)


@pytest.mark.parametrize("dtype", [F32, F64])
def test_ratio_of_log_probs_near_minus_1000(dtype):
    # Raw probabilities exp(−1000) underflow to 0 (0/0 = NaN); in log space the ratio is exact.
    logp_new = torch.tensor([[-1000.0, -1000.0, -1001.0]], dtype=dtype)
    logp_old = torch.tensor([[-1000.0, -1001.0, -1000.0]], dtype=dtype)
    got = R.probability_ratio(logp_new, logp_old)
    torch.testing.assert_close(got, torch.tensor([[1.0, math.e, 1 / math.e]], dtype=dtype))
    loss = R.clipped_surrogate_loss(logp_new, logp_old, torch.ones(1, 3, dtype=dtype), torch.ones(1, 3))
    # min(r·1, clip(r)·1) = (1, 1.2, e^−1) → loss = −(1 + 1.2 + 0.36787944117144233)/3.
    assert loss.item() == pytest.approx(-(2.2 + math.exp(-1)) / 3, rel=1e-6)


@pytest.mark.parametrize("dtype", [F32, F64])
def test_entropy_of_near_one_hot_logits_is_finite_and_tiny(dtype):
    # Logits (1000, 0, ..., 0) over 8 tokens: H = −Σ p log p ≈ 7·e^−1000·1000 ≈ 0.
    logits = torch.zeros(2, 3, 8, dtype=dtype)
    logits[..., 0] = 1000.0
    logits.requires_grad_(True)
    h = R.entropy_from_logits(logits, torch.ones(2, 3))
    assert torch.isfinite(h) and 0.0 <= h.item() < 1e-12
    (grad,) = torch.autograd.grad(h, logits)
    assert torch.isfinite(grad).all()


@pytest.mark.parametrize("dtype", [F32, F64])
def test_entropy_of_logits_scaled_by_1e3_matches_numpy(dtype):
    gen = torch.Generator().manual_seed(1)
    logits = (torch.randn(2, 5, 6, generator=gen, dtype=F64) * 1e3).to(dtype)
    got = R.entropy_from_logits(logits, torch.ones(2, 5))
    z = logits.double().numpy()
    z = z - z.max(-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    want = np.mean(-(np.exp(logp) * logp).sum(-1))
    assert torch.isfinite(got) and got.item() >= 0
    assert got.item() == pytest.approx(want, abs=1e-5)


def test_entropy_with_minus_inf_logits_is_not_nan():
    # A zero-probability token (logit −inf, e.g. a banned id) contributes 0·log 0 = 0.
    logits = torch.tensor([[[0.0, -math.inf, -math.inf], [0.0, 0.0, -math.inf]]])
    assert R.entropy_from_logits(logits, torch.ones(1, 2)).item() == pytest.approx(math.log(2) / 2)


@pytest.mark.parametrize("dtype", [F32, F64])
def test_gae_over_2048_tokens_without_discount_is_the_reverse_cumsum(dtype):
    # γ = λ = 1: A_t = Σ_{k≥t} δ_k, and with V telescoping, A_t = Σ_{k≥t} r_k − V_t.
    gen = torch.Generator().manual_seed(2)
    rewards = torch.randn(2, 2048, generator=gen, dtype=F64)
    values = torch.randn(2, 2048, generator=gen, dtype=F64)
    adv, ret = R.compute_gae(rewards.to(dtype), values.to(dtype), torch.ones(2, 2048), gamma=1.0, lam=1.0)
    rewards, values = rewards.to(dtype).double(), values.to(dtype).double()
    want = rewards.flip(1).cumsum(1).flip(1) - values
    assert torch.isfinite(adv).all()
    torch.testing.assert_close(adv.double(), want, rtol=1e-5, atol=1e-4 if dtype == F32 else 1e-9)
    torch.testing.assert_close(ret.double(), rewards.flip(1).cumsum(1).flip(1), rtol=1e-5, atol=1e-4 if dtype == F32 else 1e-9)


def test_whiten_of_large_offset_data_float32():
    # x = 1e4 + small noise: a float32 one-pass variance would lose most digits; mean/var are taken in float64.
    gen = torch.Generator().manual_seed(4)
    noise = torch.randn(4, 64, generator=gen, dtype=F64)
    x = (1e4 + noise).to(F32)
    got = R.whiten(x, torch.ones(4, 64))
    xs = x.double().numpy().ravel()
    want = (xs - xs.mean()) / math.sqrt(xs.var(ddof=1) + 1e-8)
    np.testing.assert_allclose(got.double().numpy().ravel(), want, rtol=0, atol=1e-5)
