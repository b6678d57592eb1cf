"""Buggy: clipfrac with `>=` (TRL uses a strict `>`), so ties count as clipped.

At r == 1 (the first mini-batch of every PPO step: θ = θ_old) both terms are
equal and every token counts as clipped: clipfrac = 1 where it should be 0.
"""
EXERCISE = "ex3_full_loss"
DIAGNOSIS = "clipfrac_wrong"
DESCRIPTION = "ppo_loss stats['clipfrac'] uses pg_losses2 >= pg_losses: ties (r == 1) count as clipped"
SEEN_IN = "TRL 0.11 PPOTrainer.loss (torch.gt(pg_losses2, pg_losses)) copied with ge; classroom mistake"

import torch


def ppo_loss(logp_new, logp_old, advantages, values, old_values, returns, logits, mask,
             clip_eps=0.2, clip_range_value=0.2, vf_coef=0.1, ent_coef=0.01):
    real = mask.bool()
    m = mask.to(logp_new.dtype)
    ratio = torch.exp(logp_new - logp_old.detach())
    adv = advantages.detach()
    pg_losses = -adv * ratio
    pg_losses2 = -adv * torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps)
    pg = torch.where(real, torch.max(pg_losses, pg_losses2), torch.zeros_like(ratio)).sum() / m.sum()
    vf = clipped_value_loss(values, old_values, returns, mask, clip_range_value)
    ent = entropy_from_logits(logits, mask)
    loss = pg + vf_coef * vf - ent_coef * ent
    with torch.no_grad():
        d = logp_new - logp_old
        clipped = torch.ge(pg_losses2, pg_losses).to(d.dtype)
        approx_kl = torch.where(real, 0.5 * d**2, torch.zeros_like(d)).sum() / m.sum()
        clipfrac = torch.where(real, clipped, torch.zeros_like(d)).sum() / m.sum()
    return loss, {"approx_kl": approx_kl.item(), "clipfrac": clipfrac.item()}
