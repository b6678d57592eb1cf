"""Buggy: averages each row first, then the rows (sequence-level mean).

The contract's masked mean is token-level (as TRL): a mean of per-row means
weights short responses' tokens more. Equal to the right answer only when all
rows have the same length.
"""
EXERCISE = "ex2_clipped_loss"
DIAGNOSIS = "per_row_mean"
DESCRIPTION = "clipped_surrogate_loss averages per-row means (sequence-level) instead of a token-level masked mean"
SEEN_IN = "verl-project/verl#2435 and NovaSky-AI/SkyRL#133 (token_mean vs sequence_mean loss aggregation)"

import torch


def clipped_surrogate_loss(logp_new, logp_old, advantages, mask, clip_eps=0.2):
    m = mask.to(logp_new.dtype)
    adv = advantages.detach()
    ratio = torch.exp(logp_new - logp_old.detach())
    obj = torch.min(ratio * adv, torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * adv)
    obj = torch.where(mask.bool(), obj, torch.zeros_like(obj))
    per_row = obj.sum(dim=1) / m.sum(dim=1)   # [B]
    return -per_row.mean()
