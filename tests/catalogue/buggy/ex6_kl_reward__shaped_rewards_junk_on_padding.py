"""Buggy: kl_shaped_rewards recomputes logp − ref_logp itself, without the mask.

per_token_kl is right, but the shaping does not use it: the padding junk of the
log-probs becomes −β·(junk) rewards on padding (the contract: 0 on padding),
which GAE then has to be trusted to ignore.
"""
EXERCISE = "ex6_kl_reward"
DIAGNOSIS = "rewards_not_zero_on_padding"
DESCRIPTION = "kl_shaped_rewards uses the unmasked logp - ref_logp: nonzero rewards on padding"
SEEN_IN = "radixark/miles#1383 (per-token KL rewards built over the full response without the loss mask)"

import torch


def kl_shaped_rewards(scores, logp, ref_logp, mask, kl_coef=0.05, placement="per_token"):
    real = mask.bool()
    kl = (logp - ref_logp).detach()                       # [B, T], padding not zeroed
    B = kl.shape[0]
    last = real.sum(dim=1) - 1
    rows = torch.arange(B, device=kl.device)
    scores = scores.detach().to(kl.dtype)
    if placement == "per_token":
        rewards = -kl_coef * kl
        rewards[rows, last] += scores
        return rewards
    if placement == "last_token":
        rewards = torch.zeros_like(kl)
        mean_kl = torch.where(real, kl, torch.zeros_like(kl)).sum(1) / real.sum(1).to(kl.dtype)
        rewards[rows, last] = scores - kl_coef * mean_kl
        return rewards
    raise ValueError(f"placement must be 'per_token' or 'last_token', got {placement!r}")
