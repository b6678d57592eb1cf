"""Buggy: the score lands on the first padding slot (sequence length), not the last real token.

The TRL-v2 pattern `first pad index` used as the score position; on a full row
it falls back to the last column. In training the padding slot is masked out,
so the reward model's score never reaches the policy.
"""
EXERCISE = "ex6_kl_reward"
DIAGNOSIS = "score_on_padding"
DESCRIPTION = "kl_shaped_rewards adds the score at index mask.sum() (first padding slot) instead of mask.sum() - 1"
SEEN_IN = "huggingface/trl#3750 and huggingface/trl#5338 (reward added to the PAD token after EOS)"

import torch


def kl_shaped_rewards(scores, logp, ref_logp, mask, kl_coef=0.05, placement="per_token"):
    m = mask.bool()
    kl = torch.where(m, (logp - ref_logp).detach(), torch.zeros_like(logp))
    B, T = kl.shape
    lengths = m.sum(dim=1)
    end = torch.where(lengths < T, lengths, lengths - 1)   # stay in bounds on full rows
    rows = torch.arange(B, device=kl.device)
    scores = scores.detach().to(kl.dtype)
    if placement == "per_token":
        rewards = -kl_coef * kl
        rewards[rows, end] += scores
        return rewards
    if placement == "last_token":
        rewards = torch.zeros_like(kl)
        rewards[rows, end] = scores - kl_coef * kl.sum(1) / lengths.to(kl.dtype)
        return rewards
    raise ValueError(f"placement must be 'per_token' or 'last_token', got {placement!r}")
