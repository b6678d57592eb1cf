"""Buggy: per-token KL estimate as ref_logp − logp (the reverse sign).

The sample estimate of KL(π‖π_ref) is log π − log π_ref on tokens drawn from
π; flipping it rewards drifting away from the reference.
"""
EXERCISE = "ex6_kl_reward"
DIAGNOSIS = "kl_wrong_direction"
DESCRIPTION = "per_token_kl returns ref_logp - logp instead of logp - ref_logp"
SEEN_IN = "tatsu-lab/alpaca_farm#67 (asks whether the KL term should be ref_logprobs - logprobs); huggingface/trl#463"
ALSO = "kl_penalty_sign"  # for k1, -beta*(ref - logp) is the penalty with its sign flipped: the same numbers

import torch


def per_token_kl(logp, ref_logp, mask):
    kl = (ref_logp - logp).detach()
    return torch.where(mask.bool(), kl, torch.zeros_like(kl))
