"""Buggy: adds the entropy term to the loss instead of subtracting it.

Minimising +c₂·H pushes the policy towards a deterministic one: the opposite of
the exploration bonus of eq. 5.2.
"""
EXERCISE = "ex3_full_loss"
DIAGNOSIS = "entropy_sign"
DESCRIPTION = "ppo_loss adds ent_coef * entropy (a penalty) instead of subtracting it (a bonus)"
SEEN_IN = "qiancheng0/ToolRL#52 (sign error on a regulariser in the loss collapses training)"

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
    loss = pg + vf_coef * vf + ent_coef * ent   # eq. 5.2: "+ c2 H"
    with torch.no_grad():
        d = logp_new - logp_old
        r = torch.exp(d)
        binds = (-advantages * torch.clamp(r, 1 - clip_eps, 1 + clip_eps)) > (-advantages * r)
        approx_kl = torch.where(mask.bool(), 0.5 * d**2, torch.zeros_like(d)).sum() / m.sum()
        clipfrac = torch.where(mask.bool(), binds.to(d.dtype), torch.zeros_like(d)).sum() / m.sum()
    return loss, {"approx_kl": approx_kl.item(), "clipfrac": clipfrac.item()}
