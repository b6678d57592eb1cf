"""Buggy: returns the objective L^CLIP itself (to maximise) instead of −L^CLIP."""
EXERCISE = "ex2_clipped_loss"
DIAGNOSIS = "loss_sign_flipped"
DESCRIPTION = "clipped_surrogate_loss returns +masked_mean(min(...)): the objective, not a loss to minimise"
SEEN_IN = "openai/baselines#652 (minimising -A*ratio vs maximising A*ratio)"

import torch


def clipped_surrogate_loss(logp_new, logp_old, advantages, mask, clip_eps=0.2):
    m = mask.to(logp_new.dtype)
    adv = advantages.detach()
    ratio = torch.exp(logp_new - logp_old.detach())
    obj = torch.min(ratio * adv, torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * adv)
    obj = torch.where(mask.bool(), obj, torch.zeros_like(obj))
    return obj.sum() / m.sum()  # L^CLIP (eq. 5.1)
