"""Buggy (a convention mismatch): TRL's ½ factor in the value loss.

TRL 0.11 writes `vf_loss = 0.5 * masked_mean(max(...))`; the contract follows
the book's eq. 5.2 with no ½. Copying TRL halves the critic's weight.
"""
EXERCISE = "ex3_full_loss"
DIAGNOSIS = "value_loss_half_factor"
DESCRIPTION = "clipped_value_loss multiplies by 0.5 (TRL's convention), the contract has no 1/2 factor"
SEEN_IN = "huggingface/trl v0.11 PPOTrainer.loss (vf_loss = 0.5 * masked_mean(...)), copied verbatim"

import torch


def clipped_value_loss(values, old_values, returns, mask, clip_range_value=0.2):
    m = mask.to(values.dtype)
    old_values, returns = old_values.detach(), returns.detach()
    v_clipped = old_values + torch.clamp(values - old_values, -clip_range_value, clip_range_value)
    loss = torch.max((values - returns) ** 2, (v_clipped - returns) ** 2)
    loss = torch.where(mask.bool(), loss, torch.zeros_like(loss))
    return 0.5 * loss.sum() / m.sum()
