"""Correct variant: GAE with explicit Python loops over rows and their real lengths.

Slow but obvious: for each row, walk back from its last real token; V past the
end is 0 by construction (the loop never reads it).
"""
EXERCISE = "ex4_gae"
DESCRIPTION = "compute_gae with per-row Python loops over each row's real length; whiten via masked_select + torch.var"

import torch


def compute_gae(rewards, values, mask, gamma=1.0, lam=0.95):
    if rewards.dim() != 2 or rewards.shape != values.shape or rewards.shape != mask.shape:
        raise ValueError("rewards, values and mask must be 2-D tensors of one shape")
    r, v = rewards.detach(), values.detach()
    lengths = mask.bool().sum(dim=1).tolist()
    advantages = torch.zeros_like(r)
    for b, n in enumerate(lengths):
        next_value, next_adv = 0.0, 0.0
        for t in range(n - 1, -1, -1):
            delta = r[b, t] + gamma * next_value - v[b, t]
            next_adv = delta + gamma * lam * next_adv
            advantages[b, t] = next_adv
            next_value = v[b, t]
    returns = advantages + v
    return advantages, returns


def whiten(x, mask, shift_mean=True):
    if x.shape != mask.shape:
        raise ValueError("x and mask must have one shape")
    real = torch.masked_select(x, mask.bool())
    if real.numel() < 2:
        raise ValueError(f"whiten: the mask selects {real.numel()} element(s); the unbiased variance needs 2")
    mean, var = real.mean(), real.var(unbiased=True)
    out = (x - mean) / torch.sqrt(var + 1e-8)
    return out if shift_mean else out + mean
