"""Buggy: clips the advantage into [1−ε, 1+ε] instead of the ratio."""
EXERCISE = "ex2_clipped_loss"
DIAGNOSIS = "clipped_advantage"
DESCRIPTION = "clipped_surrogate_loss computes r * clip(A, 1-eps, 1+eps) instead of clip(r, 1-eps, 1+eps) * A"
SEEN_IN = "classroom mistake (clip applied to the wrong factor of r*A)"

import torch


def clipped_surrogate_loss(logp_new, logp_old, advantages, mask, clip_eps=0.2):
    m = mask.to(logp_new.dtype)
    adv = advantages.detach()
    ratio = torch.exp(logp_new - logp_old.detach())
    surr1 = ratio * adv
    surr2 = ratio * torch.clamp(adv, 1 - clip_eps, 1 + clip_eps)
    obj = torch.min(surr1, surr2)
    obj = torch.where(mask.bool(), obj, torch.zeros_like(obj))
    return -(obj.sum() / m.sum())
