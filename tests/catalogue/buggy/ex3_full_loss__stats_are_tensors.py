"""Buggy: stats values are 0-dim tensors (still attached to the graph) instead of floats.

Logging code then keeps every step's graph alive; the contract says `stats`
values are Python floats.
"""
EXERCISE = "ex3_full_loss"
DIAGNOSIS = "stats_not_floats"
DESCRIPTION = "ppo_loss returns stats as tensors (approx_kl with grad) instead of Python floats"
SEEN_IN = "classroom mistake (logging tensors that still hold the graph)"

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
    d = logp_new - logp_old
    r = torch.exp(d)
    binds = (-advantages * torch.clamp(r, 1 - clip_eps, 1 + clip_eps)) > (-advantages * r)
    approx_kl = torch.where(mask.bool(), 0.5 * d**2, torch.zeros_like(d)).sum() / m.sum()
    clipfrac = torch.where(mask.bool(), binds.to(d.dtype), torch.zeros_like(d)).sum() / m.sum()
    return loss, {"approx_kl": approx_kl, "clipfrac": clipfrac}
