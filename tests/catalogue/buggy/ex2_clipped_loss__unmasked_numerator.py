"""Buggy: divides by the number of real tokens but sums every position.

The junk that padding holds (|x| ≤ 20 by contract) leaks into the loss and
its gradient.
"""
EXERCISE = "ex2_clipped_loss"
DIAGNOSIS = "padding_in_mean"
DESCRIPTION = "clipped_surrogate_loss sums obj over all positions, divides by mask.sum(): padding junk leaks in"
SEEN_IN = "alibaba/ROLL#444 (token-mean numerator summed over masked positions)"

import torch


def clipped_surrogate_loss(logp_new, logp_old, advantages, mask, clip_eps=0.2):
    adv = advantages.detach()
    ratio = torch.exp(logp_new - logp_old.detach())
    obj = torch.min(ratio * adv, torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * adv)
    return -obj.sum() / mask.sum()
