"""Buggy: the backward loop stores the running advantage before updating it, so A is shifted by one position.

`advantages[:, t] = lastgaelam` comes one line too early: position t gets A_{t+1}
(and the last real token 0), and the returns A + V inherit the shift. On a
one-token row everything is 0 instead of δ; on longer rows every advantage
belongs to the next token (issue 21, item 12).
"""
EXERCISE = "ex4_gae"
DIAGNOSIS = "gae_shifted_by_one"
DESCRIPTION = "compute_gae writes advantages[:, t] = lastgaelam before updating lastgaelam (A shifted by one)"
SEEN_IN = "classroom mistake (the store and the update of the CleanRL-style loop swapped)"

import torch


def compute_gae(rewards, values, mask, gamma=1.0, lam=0.95):
    m = mask.to(rewards.dtype)
    r = torch.where(mask.bool(), rewards.detach(), torch.zeros_like(rewards))
    v = torch.where(mask.bool(), values.detach(), torch.zeros_like(values))
    T = r.shape[1]
    advantages = torch.zeros_like(r)
    lastgaelam = torch.zeros_like(r[:, 0])
    for t in reversed(range(T)):
        advantages[:, t] = lastgaelam
        nextv = v[:, t + 1] if t < T - 1 else torch.zeros_like(lastgaelam)
        delta = r[:, t] + gamma * nextv - v[:, t]
        lastgaelam = (delta + gamma * lam * lastgaelam) * m[:, t]
    return advantages, advantages + v
