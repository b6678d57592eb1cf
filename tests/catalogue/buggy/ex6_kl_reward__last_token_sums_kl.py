"""Buggy: "last_token" placement subtracts β × the row's *summed* KL, not its mean.

The book's R = r_RM − 0.05 × mean_KL; the contract notes that the units differ
between placements (per_token penalises the sum, last_token the mean).
"""
EXERCISE = "ex6_kl_reward"
DIAGNOSIS = "last_token_sum_instead_of_mean"
DESCRIPTION = "kl_shaped_rewards(placement='last_token') uses the row's summed KL instead of its mean"
SEEN_IN = "huggingface/trl#2562 (token-level vs sequence-level KL penalty confusion)"

import torch


def kl_shaped_rewards(scores, logp, ref_logp, mask, kl_coef=0.05, placement="per_token"):
    m = mask.bool()
    kl = torch.where(m, (logp - ref_logp).detach(), torch.zeros_like(logp))
    B = kl.shape[0]
    last = m.sum(dim=1) - 1
    rows = torch.arange(B, device=kl.device)
    scores = scores.detach().to(kl.dtype)
    if placement == "per_token":
        rewards = -kl_coef * kl
        rewards[rows, last] += scores
        return rewards
    if placement == "last_token":
        rewards = torch.zeros_like(kl)
        rewards[rows, last] = scores - kl_coef * kl.sum(1)
        return rewards
    raise ValueError(f"placement must be 'per_token' or 'last_token', got {placement!r}")
