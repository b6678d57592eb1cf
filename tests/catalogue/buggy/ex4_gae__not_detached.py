"""Buggy: advantages and returns keep the values' autograd graph.

Numerically right; but the value loss then back-propagates into its own
target (R = A + V depends on V), and the contract says no gradient flows
into either output.
"""
EXERCISE = "ex4_gae"
DIAGNOSIS = "gae_not_detached"
DESCRIPTION = "compute_gae outputs carry gradient (values/rewards not detached)"
SEEN_IN = "huggingface/trl#546 review (advantage computation missing torch.no_grad)"

import torch


def compute_gae(rewards, values, mask, gamma=1.0, lam=0.95):
    m = mask.to(rewards.dtype)
    r = rewards * m
    v = values * m
    T = r.shape[1]
    last = torch.zeros_like(r[:, 0])
    out = [None] * T
    for t in reversed(range(T)):
        nextv = v[:, t + 1] if t < T - 1 else torch.zeros_like(last)
        delta = r[:, t] + gamma * nextv - v[:, t]
        last = (delta + gamma * lam * last) * m[:, t]
        out[t] = last
    adv = torch.stack(out, dim=1)
    return adv, adv + v
