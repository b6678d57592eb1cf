"""Buggy: whitening divides by the biased (population) variance."""
EXERCISE = "ex4_gae"
DIAGNOSIS = "whiten_biased_variance"
DESCRIPTION = "whiten uses the biased masked variance (divide by n, not n - 1)"
SEEN_IN = "huggingface/trl#1540 (ppov2 masked_whiten passing unbiased=False, unlike trl.core)"

import torch


def whiten(x, mask, shift_mean=True):
    m = mask.to(x.dtype)
    n = m.sum()
    if n < 2:
        raise ValueError(f"whiten needs at least 2 real elements, the mask selects {int(n)}")
    xs = torch.where(mask.bool(), x, torch.zeros_like(x))
    mean = xs.sum() / n
    var = (torch.where(mask.bool(), x - mean, torch.zeros_like(x)) ** 2).sum() / n
    out = (x - mean) * torch.rsqrt(var + 1e-8)
    return out if shift_mean else out + mean
