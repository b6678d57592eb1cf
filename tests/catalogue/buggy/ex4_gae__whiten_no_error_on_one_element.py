"""Buggy: no ValueError when the mask selects a single element.

The unbiased variance divides by n − 1 = 0: the output is nan/inf instead of
the clear error the contract asks for.
"""
EXERCISE = "ex4_gae"
DIAGNOSIS = "whiten_no_error_for_one_element"
DESCRIPTION = "whiten does not raise ValueError when the mask selects fewer than 2 elements (returns nan)"
SEEN_IN = "alibaba/ROLL#475 (one valid token: the unbiased variance divides by zero)"

import torch


def whiten(x, mask, shift_mean=True):
    m = mask.to(x.dtype)
    n = m.sum()
    xs = torch.where(mask.bool(), x, torch.zeros_like(x))
    mean = xs.sum() / n
    var = (torch.where(mask.bool(), x - mean, torch.zeros_like(x)) ** 2).sum() / (n - 1)
    out = (x - mean) * torch.rsqrt(var + 1e-8)
    return out if shift_mean else out + mean
