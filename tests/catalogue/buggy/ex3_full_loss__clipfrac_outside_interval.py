"""Buggy: clipfrac counts ratios outside [1−ε, 1+ε] rather than tokens where the clip binds.

For Â < 0 and r > 1+ε the min picks the unclipped term (the clip does not
bind), yet |r − 1| > ε counts it. The contract's clipfrac is TRL's
`pg_losses2 > pg_losses`.
"""
EXERCISE = "ex3_full_loss"
DIAGNOSIS = "clipfrac_wrong"
DESCRIPTION = "ppo_loss stats['clipfrac'] = fraction with |r - 1| > eps instead of where the clip binds"
SEEN_IN = "natolambert/rlhf-book#290 (clip fraction described as the ratios outside the interval)"

import torch


def ppo_loss(logp_new, logp_old, advantages, values, old_values, returns, logits, mask,
             clip_eps=0.2, clip_range_value=0.2, vf_coef=0.1, ent_coef=0.01):
    m = mask.to(logp_new.dtype)
    # the policy term of eq. 5.1, inline (self-contained: no import of ex2)
    ratio = torch.exp(logp_new - logp_old.detach())
    adv = advantages.detach()
    pg_obj = torch.min(ratio * adv, torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * adv)
    pg = -torch.where(mask.bool(), pg_obj, torch.zeros_like(pg_obj)).sum() / m.sum()
    vf = clipped_value_loss(values, old_values, returns, mask, clip_range_value)
    ent = entropy_from_logits(logits, mask)
    loss = pg + vf_coef * vf - ent_coef * ent
    with torch.no_grad():
        d = logp_new - logp_old
        r = torch.exp(d)
        outside = (r - 1).abs() > clip_eps
        approx_kl = torch.where(mask.bool(), 0.5 * d**2, torch.zeros_like(d)).sum() / m.sum()
        clipfrac = torch.where(mask.bool(), outside.to(d.dtype), torch.zeros_like(d)).sum() / m.sum()
    return loss, {"approx_kl": approx_kl.item(), "clipfrac": clipfrac.item()}
