"""Buggy: vf_coef and ent_coef applied to the wrong terms."""
EXERCISE = "ex3_full_loss"
DIAGNOSIS = "vf_coef_wrong"
DESCRIPTION = "ppo_loss computes pg + ent_coef * vf - vf_coef * entropy (coefficients swapped)"
SEEN_IN = "classroom mistake (c1/c2 of eq. 5.2 mixed up)"

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
    c1, c2 = ent_coef, vf_coef
    loss = pg + c1 * vf - c2 * ent
    with torch.no_grad():
        d = logp_new - logp_old
        r = torch.exp(d)
        binds = (-advantages * torch.clamp(r, 1 - clip_eps, 1 + clip_eps)) > (-advantages * r)
        approx_kl = torch.where(mask.bool(), 0.5 * d**2, torch.zeros_like(d)).sum() / m.sum()
        clipfrac = torch.where(mask.bool(), binds.to(d.dtype), torch.zeros_like(d)).sum() / m.sum()
    return loss, {"approx_kl": approx_kl.item(), "clipfrac": clipfrac.item()}
