"""Buggy: masks the numerator but divides by B·T (padding counted in the mean)."""
EXERCISE = "ex2_clipped_loss"
DIAGNOSIS = "padding_in_mean"
DESCRIPTION = "clipped_surrogate_loss returns (obj*mask).mean(): padding positions counted in the denominator"
SEEN_IN = "d2l-ai/d2l-en#2707 (masked loss reduced with .mean over padded steps); gluon-nlp#238"

import torch


def clipped_surrogate_loss(logp_new, logp_old, advantages, mask, clip_eps=0.2):
    m = mask.to(logp_new.dtype)
    adv = advantages.detach()
    ratio = torch.exp(logp_new - logp_old.detach())
    obj = torch.min(ratio * adv, torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * adv)
    return -(obj * m).mean()
