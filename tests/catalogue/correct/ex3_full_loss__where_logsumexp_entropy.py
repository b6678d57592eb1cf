"""Correct variant: value clip with torch.where, entropy as logsumexp(z) − Σ p·z, clipfrac by cases.

The clip binds exactly when (Â > 0 and r > 1+ε) or (Â < 0 and r < 1−ε), which
is TRL's `pg_losses2 > pg_losses` written as cases.
"""
EXERCISE = "ex3_full_loss"
DESCRIPTION = "clipped_value_loss via torch.where, entropy via logsumexp, clipfrac via the sign cases of eq. 5.9"

import torch


def _masked_mean(x, mask):
    return torch.masked_select(x, mask.bool()).mean()


def clipped_value_loss(values, old_values, returns, mask, clip_range_value=0.2):
    if len({t.shape for t in (values, old_values, returns, mask)}) != 1:
        raise ValueError("the four tensors must share one shape")
    old = old_values.detach()
    ret = returns.detach()
    lo, hi = old - clip_range_value, old + clip_range_value
    v_clipped = torch.where(values < lo, lo, torch.where(values > hi, hi, values))
    err1, err2 = (values - ret) ** 2, (v_clipped - ret) ** 2
    return _masked_mean(torch.where(err2 > err1, err2, err1), mask)


def entropy_from_logits(logits, mask):
    if logits.dim() != 3 or mask.shape != logits.shape[:2]:
        raise ValueError("need logits [B, T, V] and mask [B, T]")
    p = torch.softmax(logits, dim=-1)
    ent = torch.logsumexp(logits, dim=-1) - (p * logits).sum(-1)   # H = log Z − E_p[z]
    return _masked_mean(ent, mask)


def ppo_loss(logp_new, logp_old, advantages, values, old_values, returns, logits, mask,
             clip_eps=0.2, clip_range_value=0.2, vf_coef=0.1, ent_coef=0.01):
    if len({t.shape for t in (logp_new, logp_old, advantages, values, old_values, returns, mask)}) != 1 \
            or logits.shape[:2] != mask.shape:
        raise ValueError("token-level shapes differ or logits do not match them")
    adv = advantages.detach()
    ratio = torch.exp(logp_new - logp_old.detach())
    surrogate = torch.min(ratio * adv, torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * adv)
    pg = -_masked_mean(surrogate, mask)
    vf = clipped_value_loss(values, old_values, returns, mask, clip_range_value)
    ent = entropy_from_logits(logits, mask)
    loss = pg + vf_coef * vf - ent_coef * ent
    with torch.no_grad():
        r = ratio.detach()
        binds = ((adv > 0) & (r > 1 + clip_eps)) | ((adv < 0) & (r < 1 - clip_eps))
        stats = {
            "approx_kl": float(_masked_mean(0.5 * (logp_new.detach() - logp_old) ** 2, mask)),
            "clipfrac": float(_masked_mean(binds.to(r.dtype), mask)),
        }
    return loss, stats
