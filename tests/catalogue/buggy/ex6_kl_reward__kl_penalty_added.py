"""Buggy: the KL term is added to the reward (+β·kl) instead of subtracted."""
EXERCISE = "ex6_kl_reward"
DIAGNOSIS = "kl_penalty_sign"
DESCRIPTION = "kl_shaped_rewards adds +kl_coef * kl to the reward: a bonus for drifting from the reference"
SEEN_IN = "qiancheng0/ToolRL#52 (incorrect KL sign causes policy collapse)"

import torch


def kl_shaped_rewards(scores, logp, ref_logp, mask, kl_coef=0.05, placement="per_token"):
    m = mask.bool()
    kl = torch.where(m, (logp - ref_logp).detach(), torch.zeros_like(logp))
    B = kl.shape[0]
    last = m.sum(dim=1) - 1
    rows = torch.arange(B, device=kl.device)
    scores = scores.detach().to(kl.dtype)
    penalty = kl_coef * kl  # "the KL penalty"
    if placement == "per_token":
        rewards = penalty.clone()
        rewards[rows, last] += scores
        return rewards
    if placement == "last_token":
        rewards = torch.zeros_like(kl)
        rewards[rows, last] = scores + penalty.sum(1) / m.sum(1).to(kl.dtype)
        return rewards
    raise ValueError(f"placement must be 'per_token' or 'last_token', got {placement!r}")
