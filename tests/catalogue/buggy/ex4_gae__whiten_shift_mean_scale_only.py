"""Buggy: shift_mean=False read as "scale only" (x / std), not "add the mean back".

TRL's (and the contract's) shift_mean=False centres, scales, then adds the
original mean back: (x − μ)/σ + μ. Scale-only gives x/σ.
"""
EXERCISE = "ex4_gae"
DIAGNOSIS = "whiten_shift_mean_ignored"
DESCRIPTION = "whiten(shift_mean=False) returns x / std instead of (x - mean) / std + mean"
SEEN_IN = "THUDM/slime#2356 (changes shift_mean=False to scale-only, diverging from TRL)"

import torch


def whiten(x, mask, shift_mean=True):
    m = mask.to(x.dtype)
    n = m.sum()
    if n < 2:
        raise ValueError("whiten needs at least 2 real elements")
    xs = torch.where(mask.bool(), x, torch.zeros_like(x))
    mean = xs.sum() / n
    var = (torch.where(mask.bool(), x - mean, torch.zeros_like(x)) ** 2).sum() / (n - 1)
    if shift_mean:
        return (x - mean) * torch.rsqrt(var + 1e-8)
    return x * torch.rsqrt(var + 1e-8)
