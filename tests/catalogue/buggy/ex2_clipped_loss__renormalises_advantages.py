"""Buggy: normalises the advantages again inside the loss (per mini-batch), as SB3 does.

stable-baselines3's PPO (normalize_advantage=True) standardises advantages per
mini-batch inside train(); copied into this loss it double-whitens (the PPO
step already whitened them) and changes the loss whenever Â is not already
standardised on exactly these tokens.
"""
EXERCISE = "ex2_clipped_loss"
DIAGNOSIS = "advantages_renormalised"
DESCRIPTION = "clipped_surrogate_loss standardises the advantages over the mini-batch before using them"
SEEN_IN = "DLR-RM/stable-baselines3 PPO.train (normalize_advantage per mini-batch); MarcoMeter/recurrent-ppo-truncated-bptt#10"
ALSO = "not_finite"  # a one-token mini-batch has zero variance: the standardised advantages are nan

import torch


def clipped_surrogate_loss(logp_new, logp_old, advantages, mask, clip_eps=0.2):
    real = mask.bool()
    m = mask.to(logp_new.dtype)
    adv = advantages.detach()
    adv_real = torch.masked_select(adv, real)
    adv = (adv - adv_real.mean()) / (adv_real.std() + 1e-8)     # "normalize_advantage"
    ratio = torch.exp(logp_new - logp_old.detach())
    obj = torch.min(ratio * adv, torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * adv)
    obj = torch.where(real, obj, torch.zeros_like(obj))
    return -(obj.sum() / m.sum())
