"""Correct variant: torch.where instead of min, masked_select instead of multiply-and-sum."""
EXERCISE = "ex2_clipped_loss"
DESCRIPTION = "clipped_surrogate_loss with torch.where picking the smaller term and a masked_select mean"

import torch


def clipped_surrogate_loss(logp_new, logp_old, advantages, mask, clip_eps=0.2):
    if len({t.shape for t in (logp_new, logp_old, advantages, mask)}) != 1:
        raise ValueError("the four tensors must share one shape")
    adv = advantages.detach()
    ratio = torch.exp(logp_new - logp_old.detach())
    unclipped = ratio * adv
    clipped = ratio.clamp(1.0 - clip_eps, 1.0 + clip_eps) * adv
    pessimistic = torch.where(clipped < unclipped, clipped, unclipped)   # min, written out
    return -torch.masked_select(pessimistic, mask.bool()).mean()
