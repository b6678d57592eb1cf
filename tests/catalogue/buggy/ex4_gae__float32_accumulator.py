"""Buggy: preallocates the advantages with torch.zeros(shape), which is float32.

Writing float64 values into a float32 tensor silently rounds them: float64
inputs come back as float32 (the contract: output dtype follows the data).
"""
EXERCISE = "ex4_gae"
DIAGNOSIS = "wrong_dtype"
DESCRIPTION = "compute_gae fills torch.zeros(rewards.shape) (default float32): float64 inputs come back float32"
SEEN_IN = "classroom mistake (torch.zeros without dtype=/zeros_like)"

import torch


def compute_gae(rewards, values, mask, gamma=1.0, lam=0.95):
    m = mask.to(rewards.dtype)
    r = torch.where(mask.bool(), rewards.detach(), torch.zeros_like(rewards))
    v = torch.where(mask.bool(), values.detach(), torch.zeros_like(values))
    B, T = r.shape
    advantages = torch.zeros(B, T, device=r.device)       # dtype defaults to float32
    last = torch.zeros(B, dtype=r.dtype, device=r.device)
    for t in reversed(range(T)):
        nextv = v[:, t + 1] if t < T - 1 else torch.zeros_like(last)
        delta = r[:, t] + gamma * nextv - v[:, t]
        last = (delta + gamma * lam * last) * m[:, t]
        advantages[:, t] = last
    return advantages, advantages + v.to(advantages.dtype)
