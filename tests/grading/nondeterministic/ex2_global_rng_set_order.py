"""Wrong on purpose: the reduction is picked by Python's global RNG among a set of strings (hash order)."""

import random

import torch


def clipped_surrogate_loss(logp_new, logp_old, advantages, mask, clip_eps=0.2):
    ratio = torch.exp(logp_new - logp_old)
    obj = torch.min(ratio * advantages, torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * advantages)
    m = mask.to(obj.dtype)
    options = list({"row_means", "row_sums", "padding_in_mean"})
    reduction = options[random.randrange(len(options))]
    if reduction == "padding_in_mean":
        return -(torch.where(m > 0, obj, 0.0).sum() / m.numel())
    if reduction == "row_means":
        return -((torch.where(m > 0, obj, 0.0).sum(1) / m.sum(1)).mean())
    return -(torch.where(m > 0, obj, 0.0).sum(1).mean())
