"""Buggy: the clipped value loss takes the min of the two squared errors.

The "why max?" question is asked again and again; the answer (pessimism, as
in eq. 5.1) is the book's, and min lets the critic ignore its clip.
"""
EXERCISE = "ex3_full_loss"
DIAGNOSIS = "value_loss_min_instead_of_max"
DESCRIPTION = "clipped_value_loss uses min((V-R)^2, (V_clipped-R)^2) instead of max"
SEEN_IN = "leggedrobotics/rsl_rl#152 (user swaps max for min); openai/baselines#1140; openai/baselines#765"

import torch


def clipped_value_loss(values, old_values, returns, mask, clip_range_value=0.2):
    m = mask.to(values.dtype)
    old_values, returns = old_values.detach(), returns.detach()
    v_clipped = old_values + torch.clamp(values - old_values, -clip_range_value, clip_range_value)
    loss = torch.min((values - returns) ** 2, (v_clipped - returns) ** 2)
    loss = torch.where(mask.bool(), loss, torch.zeros_like(loss))
    return loss.sum() / m.sum()
