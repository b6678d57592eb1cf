"""Buggy: hard-codes ε = 0.2 and ignores the clip_eps argument."""
EXERCISE = "ex2_clipped_loss"
DIAGNOSIS = "ignores_hyperparameter"
DESCRIPTION = "clipped_surrogate_loss hard-codes 0.2 instead of using clip_eps"
SEEN_IN = "classroom mistake (the book's value hard-coded)"

import torch

CLIP = 0.2  # the book's cliprange


def clipped_surrogate_loss(logp_new, logp_old, advantages, mask, clip_eps=0.2):
    m = mask.to(logp_new.dtype)
    adv = advantages.detach()
    ratio = torch.exp(logp_new - logp_old.detach())
    obj = torch.min(ratio * adv, torch.clamp(ratio, 1 - CLIP, 1 + CLIP) * adv)
    obj = torch.where(mask.bool(), obj, torch.zeros_like(obj))
    return -(obj.sum() / m.sum())
