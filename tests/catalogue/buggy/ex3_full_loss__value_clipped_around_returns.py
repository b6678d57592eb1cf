"""Buggy: clips V around the returns instead of around the old values.

clip(V − R, −c, c) bounds the error itself, i.e. a Huber-like loss; eq. 5.2's
clip keeps the new value near V_old (the trust region of the critic).
"""
EXERCISE = "ex3_full_loss"
DIAGNOSIS = "value_clip_around_returns"
DESCRIPTION = "clipped_value_loss clips V into R +- c (around the returns) instead of V_old +- c"
SEEN_IN = "ray-project/ray#19291 (argues the clip should bound the error to the target)"

import torch


def clipped_value_loss(values, old_values, returns, mask, clip_range_value=0.2):
    m = mask.to(values.dtype)
    returns = returns.detach()
    v_clipped = returns + torch.clamp(values - returns, -clip_range_value, clip_range_value)
    loss = torch.max((values - returns) ** 2, (v_clipped - returns) ** 2)
    loss = torch.where(mask.bool(), loss, torch.zeros_like(loss))
    return loss.sum() / m.sum()
