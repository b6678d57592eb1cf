"""Buggy: takes the optimistic max of the two surrogate terms instead of the min.

Book eq. 5.1's pessimistic bound becomes an optimistic one: the clip never
removes the incentive to move (eq. 5.9's zero-gradient cases flow instead).
"""
EXERCISE = "ex2_clipped_loss"
DIAGNOSIS = "max_instead_of_min"
DESCRIPTION = "clipped_surrogate_loss uses max(r*A, clip(r)*A) instead of min"
SEEN_IN = "TRL 0.11 PPOTrainer.loss takes torch.max of the NEGATED terms; copying the max onto the positive terms flips the bound (classroom mistake)"

import torch


def clipped_surrogate_loss(logp_new, logp_old, advantages, mask, clip_eps=0.2):
    m = mask.to(logp_new.dtype)
    adv = advantages.detach()
    ratio = torch.exp(logp_new - logp_old.detach())
    surr1 = ratio * adv
    surr2 = torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * adv
    obj = torch.max(surr1, surr2)
    obj = torch.where(mask.bool(), obj, torch.zeros_like(obj))
    return -(obj.sum() / m.sum())
