"""Buggy: whitening statistics over every position, padding included."""
EXERCISE = "ex4_gae"
DIAGNOSIS = "whiten_padding_in_stats"
DESCRIPTION = "whiten computes mean and variance over all positions (x.mean(), x.var()), padding included"
SEEN_IN = "NovaSky-AI/SkyRL#1305 (advantage normalisation mean over padding); MarcoMeter/recurrent-ppo-truncated-bptt#10"

import torch


def whiten(x, mask, shift_mean=True):
    if mask.bool().sum() < 2:
        raise ValueError("whiten needs at least 2 real elements")
    mean, var = x.mean(), x.var()
    out = (x - mean) * torch.rsqrt(var + 1e-8)
    return out if shift_mean else out + mean
