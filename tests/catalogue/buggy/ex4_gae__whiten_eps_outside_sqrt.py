"""Buggy: (x − μ) / (σ + 1e-8) instead of (x − μ) / sqrt(σ² + 1e-8).

Indistinguishable for ordinary data; for near-constant inputs (σ² ≈ 1e-8, e.g.
advantages of a batch where every response got the same score) the output is
scaled very differently.
"""
EXERCISE = "ex4_gae"
DIAGNOSIS = "whiten_missing_eps"
DESCRIPTION = "whiten divides by std + 1e-8 (eps outside the square root) instead of sqrt(var + 1e-8)"
SEEN_IN = "MarcoMeter/recurrent-ppo-truncated-bptt#10 (adv.std() + 1e-8 normalisation, as in SB3/CleanRL)"

import torch


def whiten(x, mask, shift_mean=True):
    real = torch.masked_select(x, mask.bool())
    if real.numel() < 2:
        raise ValueError("whiten needs at least 2 real elements")
    mean, std = real.mean(), real.std()
    out = (x - mean) / (std + 1e-8)
    return out if shift_mean else out + mean
