"""Buggy: sets padding to 0 with the mask, then takes the plain mean/variance.

Looks masked (x * mask), but the zeros are still counted: the mean shrinks
towards 0 and the variance is mixed with the zeros.
"""
EXERCISE = "ex4_gae"
DIAGNOSIS = "whiten_padding_in_stats"
DESCRIPTION = "whiten multiplies by the mask then uses .mean()/.var(): zeroed padding still counted"
SEEN_IN = "NovaSky-AI/SkyRL#1305 (inconsistent masking of mean vs variance)"

import torch


def whiten(x, mask, shift_mean=True):
    m = mask.to(x.dtype)
    if m.sum() < 2:
        raise ValueError("whiten needs at least 2 real elements")
    xm = x * m
    mean, var = xm.mean(), xm.var()
    out = (x - mean) * torch.rsqrt(var + 1e-8)
    return out if shift_mean else out + mean
