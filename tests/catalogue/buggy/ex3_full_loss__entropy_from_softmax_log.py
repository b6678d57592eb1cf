"""Buggy: −Σ p·log p with p = softmax, log(p) taken literally.

For confident tokens p underflows to 0 and 0·log 0 = 0·(−inf) = nan; the
log-softmax (or logsumexp) form stays finite for logits of any size.
"""
EXERCISE = "ex3_full_loss"
DIAGNOSIS = "entropy_unstable"
DESCRIPTION = "entropy_from_logits computes -(p * log p) with p = softmax: nan once some p underflows to 0"
SEEN_IN = "tiandunx/loss_function_search#4 (softmax instability); pytorch/pytorch#6864"

import torch


def entropy_from_logits(logits, mask):
    m = mask.to(logits.dtype)
    p = torch.softmax(logits, dim=-1)
    ent = -(p * torch.log(p)).sum(-1)  # [B, T]
    ent = torch.where(mask.bool(), ent, torch.zeros_like(ent))
    return ent.sum() / m.sum()
