"""Buggy: the recursion A_t = δ_t + γλ·A_{t+1} is run forward in time.

The loop accumulates past δs into later advantages (A_t = δ_t + γλ·A_{t−1});
on a one-token row it is right, so short tests pass.
"""
EXERCISE = "ex4_gae"
DIAGNOSIS = "gae_runs_forward"
DESCRIPTION = "compute_gae iterates t = 0..T-1 and accumulates past deltas instead of future ones"
SEEN_IN = "huggingface/trl#2068 (why is the advantage loop reversed?)"

import torch


def compute_gae(rewards, values, mask, gamma=1.0, lam=0.95):
    m = mask.to(rewards.dtype)
    r = torch.where(mask.bool(), rewards.detach(), torch.zeros_like(rewards))
    v = torch.where(mask.bool(), values.detach(), torch.zeros_like(values))
    T = r.shape[1]
    last = torch.zeros_like(r[:, 0])
    out = []
    for t in range(T):
        nextv = v[:, t + 1] if t < T - 1 else torch.zeros_like(last)
        delta = r[:, t] + gamma * nextv - v[:, t]
        last = (delta + gamma * lam * last) * m[:, t]
        out.append(last)
    adv = torch.stack(out, dim=1)
    return adv, adv + v
