"""Buggy: clamps the log-ratio to [−20, 20] "for stability" before exponentiating.

Seen in production PPO losses; it changes r (and zeroes its gradient) as soon
as |log π_new − log π_old| > 20, which the contract's r = exp(logp_new − logp_old)
does not allow. Only inputs far from the policy reveal it.
"""
EXERCISE = "ex1_ratio"
DIAGNOSIS = "ratio_clamped"
DESCRIPTION = "probability_ratio returns exp(clamp(logp_new - logp_old, -20, 20))"
SEEN_IN = "inclusionAI/AReno#68 (ppo_loss_fn: log_ratio = clamp(train_logprob - old_logprob, -20, 20))"

import torch


def probability_ratio(logp_new, logp_old):
    log_ratio = torch.clamp(logp_new - logp_old, -20.0, 20.0)   # avoid overflow in exp
    return torch.exp(log_ratio)
