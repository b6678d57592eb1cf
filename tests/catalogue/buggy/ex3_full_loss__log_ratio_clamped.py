"""Buggy: ppo_loss clamps the log-ratio to [-20, 20] before exp "against overflow"; log space already keeps exp
finite, and eq. 5.1 bounds only the gain: with Â < 0 and r > e^20 the unclipped term r·Â is the smaller one and
must count in full (Book eqs. 5.1, 5.9, 5.20).
"""
EXERCISE = "ex3_full_loss"
DIAGNOSIS = "ratio_clamped"
DESCRIPTION = "ppo_loss's policy term uses r = exp(clamp(logp_new - logp_old, -20, 20))"
SEEN_IN = "the clamp of ex1_ratio__log_ratio_clamped (its SEEN_IN: inclusionAI/AReno#68), written inside the loss"

import torch


def ppo_loss(logp_new, logp_old, advantages, values, old_values, returns, logits, mask,
             clip_eps=0.2, clip_range_value=0.2, vf_coef=0.1, ent_coef=0.01):
    logp_old, adv = logp_old.detach(), advantages.detach()
    ratio = torch.exp(torch.clamp(logp_new - logp_old, -20.0, 20.0))
    unclipped = ratio * adv
    clipped = torch.clamp(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * adv
    binds = ((adv > 0) & (ratio >= 1.0 + clip_eps)) | ((adv < 0) & (ratio <= 1.0 - clip_eps))
    policy_loss = -masked_mean(torch.where(binds, clipped.detach(), unclipped), mask)  # noqa: F821 - above
    value_loss = clipped_value_loss(values, old_values, returns, mask, clip_range_value)  # noqa: F821
    entropy = entropy_from_logits(logits, mask)  # noqa: F821
    loss = policy_loss + vf_coef * value_loss - ent_coef * entropy
    with torch.no_grad():
        approx_kl = masked_mean(0.5 * (logp_new - logp_old) ** 2, mask)  # noqa: F821
        clipfrac = masked_mean((clipped < unclipped).to(unclipped.dtype), mask)  # noqa: F821
    stats = {"approx_kl": approx_kl.item(), "clipfrac": clipfrac.item(), "policy_loss": policy_loss.item(),
             "value_loss": value_loss.item(), "entropy": entropy.item(), "loss": loss.item()}
    return loss, stats
