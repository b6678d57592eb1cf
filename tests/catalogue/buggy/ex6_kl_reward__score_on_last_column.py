"""Buggy: the score always goes to column T−1.

Right for the longest (or truncated) rows only; every shorter row gets its
score on padding.
"""
EXERCISE = "ex6_kl_reward"
DIAGNOSIS = "score_on_padding"
DESCRIPTION = "kl_shaped_rewards adds the score at column -1 whatever the row's length"
SEEN_IN = "EleutherAI/gpt-neox#1285 (reward read at the last position instead of EOS); sunzeyeah/RLHF#17"

import torch


def kl_shaped_rewards(scores, logp, ref_logp, mask, kl_coef=0.05, placement="per_token"):
    m = mask.bool()
    kl = torch.where(m, (logp - ref_logp).detach(), torch.zeros_like(logp))
    scores = scores.detach().to(kl.dtype)
    if placement == "per_token":
        rewards = -kl_coef * kl
        rewards[:, -1] += scores
        return rewards
    if placement == "last_token":
        rewards = torch.zeros_like(kl)
        rewards[:, -1] = scores - kl_coef * kl.sum(1) / m.sum(1).to(kl.dtype)
        return rewards
    raise ValueError(f"placement must be 'per_token' or 'last_token', got {placement!r}")
