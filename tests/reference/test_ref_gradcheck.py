"""``torch.autograd.gradcheck`` in float64 for every differentiable function, away from the clip kinks."""

import torch
from torch.autograd import gradcheck

import ppo_reference as R

F64 = torch.float64
MASK = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]])


def leaf(x):
    return x.clone().to(F64).requires_grad_(True)


def test_gradcheck_clipped_surrogate_loss():
    # Ratios 0.5, 0.9, 1.1, 1.5 with both signs of Â: every case of eq. 5.9, each ≥ 0.1 from 1 ± 0.2.
    ratios = torch.tensor([[0.5, 0.9, 1.1, 1.5], [0.9, 1.5, 1.0, 1.0]], dtype=F64)
    logp_old = torch.full((2, 4), -1.0, dtype=F64)
    adv = torch.tensor([[1.0, -1.0, 2.0, -0.5], [-2.0, 1.0, 7.0, 7.0]], dtype=F64)
    logp_new = leaf(logp_old + ratios.log())
    assert gradcheck(lambda lp: R.clipped_surrogate_loss(lp, logp_old, adv, MASK), (logp_new,))


def test_gradcheck_clipped_value_loss():
    # V − V_old ∈ {±0.1, ±0.5}: inside and outside the clip by ≥ 0.1; returns chosen so that the
    # two squares differ by a clear margin.
    old = torch.zeros(2, 4, dtype=F64)
    values = leaf(torch.tensor([[0.1, -0.1, 0.5, -0.5], [0.5, 0.1, 3.0, 3.0]]))
    returns = torch.tensor([[1.0, -2.0, -1.0, 2.0], [2.0, 1.0, 0.0, 0.0]], dtype=F64)
    assert gradcheck(lambda v: R.clipped_value_loss(v, old, returns, MASK, 0.2), (values,))


def test_gradcheck_entropy_and_logprobs():
    gen = torch.Generator().manual_seed(0)
    logits = leaf(torch.randn(2, 4, 5, generator=gen))
    tokens = torch.randint(0, 5, (2, 4), generator=gen)
    assert gradcheck(lambda z: R.entropy_from_logits(z, MASK), (logits,))
    assert gradcheck(lambda z: R.logprobs_from_logits(z, tokens), (logits,))


def test_gradcheck_ppo_loss():
    gen = torch.Generator().manual_seed(1)
    logp_old = torch.full((2, 4), -1.0, dtype=F64)
    logp_new = leaf(logp_old + torch.tensor([[0.5, 0.9, 1.1, 1.5], [0.9, 1.5, 1.0, 1.0]], dtype=F64).log())
    adv = torch.tensor([[1.0, -1.0, 2.0, -0.5], [-2.0, 1.0, 7.0, 7.0]], dtype=F64)
    old = torch.zeros(2, 4, dtype=F64)
    values = leaf(torch.tensor([[0.1, -0.1, 0.5, -0.5], [0.5, 0.1, 3.0, 3.0]]))
    returns = torch.tensor([[1.0, -2.0, -1.0, 2.0], [2.0, 1.0, 0.0, 0.0]], dtype=F64)
    logits = leaf(torch.randn(2, 4, 3, generator=gen))

    def loss(lp, v, z):
        return R.ppo_loss(lp, logp_old, adv, v, old, returns, z, MASK, vf_coef=0.3, ent_coef=0.05)[0]

    assert gradcheck(loss, (logp_new, values, logits))


def test_gradcheck_masked_helpers_and_whiten():
    gen = torch.Generator().manual_seed(2)
    x = leaf(torch.randn(2, 4, generator=gen))
    assert gradcheck(lambda v: R.masked_mean(v, MASK), (x,))
    assert gradcheck(lambda v: R.masked_mean(v, MASK, dim=1), (x,))
    assert gradcheck(lambda v: R.masked_var(v, MASK), (x,))
    assert gradcheck(lambda v: R.whiten(v, MASK), (x,))
    assert gradcheck(lambda v: R.masked_whiten(v, MASK, shift_mean=False), (x,))
    assert gradcheck(lambda a, b: R.probability_ratio(a, b), (x, leaf(torch.randn(2, 4, generator=gen))))
