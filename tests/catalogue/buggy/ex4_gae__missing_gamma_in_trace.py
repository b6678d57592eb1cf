"""Buggy: the trace decays by λ alone (A_t = δ_t + λ·A_{t+1}).

Invisible with the book's γ = 1.0, which is why it survives the book's config.
"""
EXERCISE = "ex4_gae"
DIAGNOSIS = "gae_missing_gamma"
DESCRIPTION = "compute_gae decays the trace by lam instead of gamma*lam (identical when gamma = 1)"
SEEN_IN = "google-research/batch-ppo#32 (discounting bugs in an untested lambda_advantage); classroom mistake"

import torch


def compute_gae(rewards, values, mask, gamma=1.0, lam=0.95):
    m = mask.to(rewards.dtype)
    r = torch.where(mask.bool(), rewards.detach(), torch.zeros_like(rewards))
    v = torch.where(mask.bool(), values.detach(), torch.zeros_like(values))
    T = r.shape[1]
    last = torch.zeros_like(r[:, 0])
    out = [None] * T
    for t in reversed(range(T)):
        nextv = v[:, t + 1] if t < T - 1 else torch.zeros_like(last)
        delta = r[:, t] + gamma * nextv - v[:, t]
        last = (delta + lam * last) * m[:, t]
        out[t] = last
    adv = torch.stack(out, dim=1)
    return adv, adv + v
