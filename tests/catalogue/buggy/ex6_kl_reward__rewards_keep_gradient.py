"""Buggy: shaped rewards carry the policy's autograd graph (no detach).

The values are right; but anything trained on them back-propagates through
the KL into the policy, and the contract says reward outputs carry no gradient.
"""
EXERCISE = "ex6_kl_reward"
DIAGNOSIS = "rewards_keep_gradient"
DESCRIPTION = "kl_shaped_rewards and per_token_kl return tensors that require grad (logp not detached)"
SEEN_IN = "huggingface/trl#546 review (rollout statistics computed without torch.no_grad)"

import torch


def per_token_kl(logp, ref_logp, mask):
    kl = logp - ref_logp
    return torch.where(mask.bool(), kl, torch.zeros_like(kl))


def kl_shaped_rewards(scores, logp, ref_logp, mask, kl_coef=0.05, placement="per_token"):
    m = mask.bool()
    kl = per_token_kl(logp, ref_logp, mask)
    B = kl.shape[0]
    last = m.sum(dim=1) - 1
    onehot = torch.zeros_like(kl)
    onehot[torch.arange(B), last] = 1.0
    scores = scores.to(kl.dtype)
    if placement == "per_token":
        return -kl_coef * kl + onehot * scores[:, None]
    if placement == "last_token":
        mean_kl = kl.sum(1) / m.sum(1).to(kl.dtype)
        return onehot * (scores - kl_coef * mean_kl)[:, None]
    raise ValueError(f"placement must be 'per_token' or 'last_token', got {placement!r}")
