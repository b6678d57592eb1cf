"""Buggy: bootstraps a truncated row (no padding) from its own last value.

"The episode was cut, so bootstrap" is right for time-limit truncation in
control tasks, but the contract says nothing is bootstrapped past a row's last
real token, truncated or not.
"""
EXERCISE = "ex4_gae"
DIAGNOSIS = "gae_bootstraps_from_padding"
DESCRIPTION = "compute_gae bootstraps rows that fill all T columns with V_{T-1} (treats them as truncated episodes)"
SEEN_IN = "vwxyzjn/cleanrl#16 (GAE last-value handling); hill-a/stable-baselines#385"

import torch


def compute_gae(rewards, values, mask, gamma=1.0, lam=0.95):
    m = mask.to(rewards.dtype)
    r = torch.where(mask.bool(), rewards.detach(), torch.zeros_like(rewards))
    v = torch.where(mask.bool(), values.detach(), torch.zeros_like(values))
    T = r.shape[1]
    # rows that never hit padding were cut by max_new_tokens: bootstrap from their last value
    last_value = v[:, -1] * m[:, -1]
    last = torch.zeros_like(r[:, 0])
    out = [None] * T
    for t in reversed(range(T)):
        nextv = v[:, t + 1] if t < T - 1 else last_value
        delta = r[:, t] + gamma * nextv - v[:, t]
        last = (delta + gamma * lam * last) * m[:, t]
        out[t] = last
    adv = torch.stack(out, dim=1)
    return adv, adv + v
