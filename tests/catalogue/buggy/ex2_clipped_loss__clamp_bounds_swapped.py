"""Buggy: clamp(r, 1+ε, 1−ε) with the bounds swapped.

torch.clamp with min > max returns max everywhere, so the clipped ratio is the
constant 1−ε: no error, plausible-looking numbers.
"""
EXERCISE = "ex2_clipped_loss"
DIAGNOSIS = "wrong_clip_bounds"
DESCRIPTION = "clipped_surrogate_loss calls torch.clamp(ratio, 1 + eps, 1 - eps): bounds swapped"
SEEN_IN = "classroom mistake (torch.clamp silently accepts min > max)"

import torch


def clipped_surrogate_loss(logp_new, logp_old, advantages, mask, clip_eps=0.2):
    m = mask.to(logp_new.dtype)
    adv = advantages.detach()
    ratio = torch.exp(logp_new - logp_old.detach())
    clipped = torch.clamp(ratio, 1 + clip_eps, 1 - clip_eps)
    obj = torch.min(ratio * adv, clipped * adv)
    obj = torch.where(mask.bool(), obj, torch.zeros_like(obj))
    return -(obj.sum() / m.sum())
