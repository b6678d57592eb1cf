"""Buggy: `.mean()` over the batch of per-row sums (no division by token count).

A common "masked" reduction: sums each row's real tokens, then averages over
rows, so the loss scales with response length.
"""
EXERCISE = "ex2_clipped_loss"
DIAGNOSIS = "per_row_sum"
DESCRIPTION = "clipped_surrogate_loss returns (obj*mask).sum(1).mean(): per-row sums averaged over the batch"
SEEN_IN = "huggingface/trl#6654 (luspo aggregation weighting rows by length); Dr. GRPO discussion sail-sg/understand-r1-zero#11"

import torch


def clipped_surrogate_loss(logp_new, logp_old, advantages, mask, clip_eps=0.2):
    adv = advantages.detach()
    ratio = torch.exp(logp_new - logp_old.detach())
    obj = torch.min(ratio * adv, torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * adv)
    obj = torch.where(mask.bool(), obj, torch.zeros_like(obj))
    return -obj.sum(dim=1).mean()
