"""Buggy: reports approx_kl as the k1 estimator mean(logp_old − logp_new).

That is TRL's `policykl`, not its `approxkl` = ½·mean((logp_new − logp_old)²),
which the contract names. k1 can be negative and averages to ~0 early on.
"""
EXERCISE = "ex3_full_loss"
DIAGNOSIS = "approx_kl_wrong"
DESCRIPTION = "ppo_loss stats['approx_kl'] is masked_mean(logp_old - logp_new) (k1), not 1/2 (logp_new - logp_old)^2"
SEEN_IN = "huggingface/trl#463 (k1 KL estimates going negative)"

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
        binds = (-advantages * torch.clamp(r, 1 - clip_eps, 1 + clip_eps)) > (-advantages * r)
        approx_kl = torch.where(mask.bool(), -d, torch.zeros_like(d)).sum() / m.sum()
        clipfrac = torch.where(mask.bool(), binds.to(d.dtype), torch.zeros_like(d)).sum() / m.sum()
    return loss, {"approx_kl": approx_kl.item(), "clipfrac": clipfrac.item()}
