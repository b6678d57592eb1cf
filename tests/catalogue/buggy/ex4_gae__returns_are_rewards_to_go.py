"""Buggy: returns are the discounted rewards-to-go, not A + V.

With λ = 1 the two agree; with λ = 0.95 the contract's returns (TD(λ)
targets, A + V) differ from the Monte-Carlo return.
"""
EXERCISE = "ex4_gae"
DIAGNOSIS = "returns_not_a_plus_v"
DESCRIPTION = "compute_gae returns the discounted sum of rewards as the returns instead of advantages + values"
SEEN_IN = "huggingface/trl#19 and openai/lm-human-preferences#13 (why returns = advantages + values?); trl#1150"

import torch


def compute_gae(rewards, values, mask, gamma=1.0, lam=0.95):
    m = mask.to(rewards.dtype)
    r = torch.where(mask.bool(), rewards.detach(), torch.zeros_like(rewards))
    v = torch.where(mask.bool(), values.detach(), torch.zeros_like(values))
    T = r.shape[1]
    last = torch.zeros_like(r[:, 0])
    running = torch.zeros_like(r[:, 0])
    adv, ret = [None] * T, [None] * T
    for t in reversed(range(T)):
        nextv = v[:, t + 1] if t < T - 1 else torch.zeros_like(last)
        delta = r[:, t] + gamma * nextv - v[:, t]
        last = (delta + gamma * lam * last) * m[:, t]
        running = (r[:, t] + gamma * running) * m[:, t]
        adv[t], ret[t] = last, running
    return torch.stack(adv, dim=1), torch.stack(ret, dim=1)
