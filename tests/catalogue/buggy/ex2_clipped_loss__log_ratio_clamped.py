"""Buggy: clipped_surrogate_loss clamps the log-ratio to [-20, 20] before exp "against overflow", as some
trainers do; log space already keeps exp finite, and eq. 5.1 bounds only the gain: with Â < 0 and r > e^20
the unclipped term r·Â is the smaller one and must count in full (Book eqs. 5.1, 5.9).
"""
EXERCISE = "ex2_clipped_loss"
DIAGNOSIS = "ratio_clamped"
DESCRIPTION = "clipped_surrogate_loss uses r = exp(clamp(logp_new - logp_old, -20, 20))"
SEEN_IN = "the clamp of ex1_ratio__log_ratio_clamped (its SEEN_IN: inclusionAI/AReno#68), written inside the loss"

import torch


def clipped_surrogate_loss(logp_new, logp_old, advantages, mask, clip_eps=0.2):
    adv = advantages.detach()
    ratio = torch.exp(torch.clamp(logp_new - logp_old.detach(), -20.0, 20.0))
    unclipped = ratio * adv
    clipped = torch.clamp(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * adv
    binds = ((adv > 0) & (ratio >= 1.0 + clip_eps)) | ((adv < 0) & (ratio <= 1.0 - clip_eps))
    objective = torch.where(binds, clipped.detach(), unclipped)
    return -masked_mean(objective, mask)  # noqa: F821 - the solution's, defined above
