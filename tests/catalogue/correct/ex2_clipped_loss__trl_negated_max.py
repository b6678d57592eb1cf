"""Correct variant: TRL's form, max of the negated terms, in float64 inside."""
EXERCISE = "ex2_clipped_loss"
DESCRIPTION = "clipped_surrogate_loss as masked_mean(max(-A*r, -A*clip(r))) computed in float64, cast back"

import torch


def clipped_surrogate_loss(logp_new, logp_old, advantages, mask, clip_eps=0.2):
    if len({t.shape for t in (logp_new, logp_old, advantages, mask)}) != 1:
        raise ValueError("the four tensors must share one shape")
    dtype = logp_new.dtype
    lp_new = logp_new.to(torch.float64)
    lp_old = logp_old.detach().to(torch.float64)
    adv = advantages.detach().to(torch.float64)
    m = mask.to(torch.float64)
    ratio = torch.exp(lp_new - lp_old)
    pg_losses = -adv * ratio
    pg_losses2 = -adv * torch.clamp(ratio, 1.0 - clip_eps, 1.0 + clip_eps)
    per_token = torch.max(pg_losses, pg_losses2)
    per_token = torch.where(m > 0, per_token, torch.zeros_like(per_token))  # junk never multiplies
    return (per_token.sum() / m.sum()).to(dtype)
