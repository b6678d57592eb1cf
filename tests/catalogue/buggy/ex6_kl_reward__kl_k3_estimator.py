"""Buggy: the per-token KL written with the k3 estimator of GRPO (chapter 7), not log π − log π_ref.

k3 = exp(ref − logp) − (ref − logp) − 1 ≥ 0 is the "low-variance" KL that
GRPO/verl put in the loss; PPO's reward shaping (TRL's `kl_penalty="kl"`, the
contract) uses k1 = logp − ref_logp, which can be negative per token.
"""
EXERCISE = "ex6_kl_reward"
DIAGNOSIS = "kl_wrong_estimator"
DESCRIPTION = "per_token_kl returns the k3 estimator exp(r) - r - 1 (r = ref_logp - logp) instead of logp - ref_logp"
SEEN_IN = "one-covenant/grail#42 (KL formulation questioned in review); huggingface/trl#541 (full-distribution KL to avoid negative k1)"

import torch


def per_token_kl(logp, ref_logp, mask):
    log_ratio = (ref_logp - logp).detach()
    k3 = torch.exp(log_ratio) - log_ratio - 1.0     # non-negative, low variance
    return torch.where(mask.bool(), k3, torch.zeros_like(k3))
