"""Correct variant (c02 of the landing-7 unseen set, written outside the project from the docstrings
alone): boolean-index selection of real tokens, float64 internally, clip cases written explicitly (constant ±ε·Â where they bind).
"""
EXERCISE = "ex2_clipped_loss"
DESCRIPTION = "c02: boolean-index selection of real tokens, float64 inside, the clip cases written explicitly"

import torch


def clipped_surrogate_loss(
    logp_new: torch.Tensor,
    logp_old: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    clip_eps: float = 0.2,
) -> torch.Tensor:
    if not (logp_new.shape == logp_old.shape == advantages.shape == mask.shape):
        raise ValueError(f"shapes differ: {[tuple(t.shape) for t in (logp_new, logp_old, advantages, mask)]}")
    real = mask.bool()
    lr = logp_new[real].to(torch.float64) - logp_old.detach()[real].to(torch.float64)
    a = advantages.detach()[real].to(torch.float64)
    r = lr.exp()
    lo, hi = 1.0 - clip_eps, 1.0 + clip_eps
    pos_bind = (a > 0) & (r >= hi)
    neg_bind = (a < 0) & (r <= lo)
    surrogate = torch.where(pos_bind, (hi * a), torch.where(neg_bind, lo * a, r * a))
    return (-surrogate.mean()).to(logp_new.dtype)
