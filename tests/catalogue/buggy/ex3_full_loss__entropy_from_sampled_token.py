"""Buggy: the entropy bonus estimated by the sampled tokens' surprisal, −log π(a_t).

−log π(a_t) is an unbiased single-sample estimate of H only in expectation
over a_t ~ π, and its gradient is not the entropy's gradient (it pushes the
sampled token down, whatever its advantage). Eq. 5.2 uses the full H[π(·|s_t)].
"""
EXERCISE = "ex3_full_loss"
DIAGNOSIS = "entropy_from_sampled_token"
DESCRIPTION = "ppo_loss uses masked_mean(-logp_new) as the entropy instead of entropy_from_logits(logits)"
SEEN_IN = "huggingface/trl#6803 (entropy estimated as -logprobs of the sampled tokens in online DPO stats)"

import torch


def ppo_loss(logp_new, logp_old, advantages, values, old_values, returns, logits, mask,
             clip_eps=0.2, clip_range_value=0.2, vf_coef=0.1, ent_coef=0.01):
    real = mask.bool()
    m = mask.to(logp_new.dtype)
    ratio = torch.exp(logp_new - logp_old.detach())
    adv = advantages.detach()
    pg_obj = torch.min(ratio * adv, torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * adv)
    pg = -torch.where(real, pg_obj, torch.zeros_like(pg_obj)).sum() / m.sum()
    vf = clipped_value_loss(values, old_values, returns, mask, clip_range_value)
    ent = torch.where(real, -logp_new, torch.zeros_like(logp_new)).sum() / m.sum()   # cheap entropy
    loss = pg + vf_coef * vf - ent_coef * ent
    with torch.no_grad():
        d = logp_new - logp_old
        r = torch.exp(d)
        binds = (-advantages * torch.clamp(r, 1 - clip_eps, 1 + clip_eps)) > (-advantages * r)
        approx_kl = torch.where(real, 0.5 * d**2, torch.zeros_like(d)).sum() / m.sum()
        clipfrac = torch.where(real, binds.to(d.dtype), torch.zeros_like(d)).sum() / m.sum()
    return loss, {"approx_kl": approx_kl.item(), "clipfrac": clipfrac.item()}
