"""Buggy: kl_shaped_rewards detaches the KL (per_token_kl does) but not the reward model's scores, so the
shaped rewards carry the scores' graph; the docstring says the rewards are detached (the reward model is not
trained by the policy's loss, Book §5.6).
"""
EXERCISE = "ex6_kl_reward"
DIAGNOSIS = "rewards_keep_gradient"
DESCRIPTION = "kl_shaped_rewards uses scores without detach(): the rewards carry the reward model's gradient"
SEEN_IN = "classroom mistake (the KL detached, the score forgotten)"

import torch


def kl_shaped_rewards(scores, logp, ref_logp, mask, kl_coef=0.05, placement="per_token"):
    if placement not in ("per_token", "last_token"):
        raise ValueError(f"unknown placement {placement!r}")
    kl = per_token_kl(logp, ref_logp, mask)  # noqa: F821 - the solution's, defined above (detached)
    real = mask.bool()
    n_real = real.sum(dim=1)
    last = (n_real - 1).unsqueeze(1)
    scores = scores.to(dtype=kl.dtype)
    if placement == "per_token":
        rewards = torch.where(real, -kl_coef * kl, torch.zeros_like(kl))
        final = scores
    else:
        rewards = torch.zeros_like(kl)
        final = scores - kl_coef * kl.sum(dim=1) / n_real
    return rewards.scatter_add(1, last, final.unsqueeze(1))
