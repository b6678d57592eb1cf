"""Correct variant: GAE and whitening written as verl's core_algos writes them.

verl's `compute_gae_advantage_return` (verl/trainer/ppo/core_algos.py) runs the reverse loop with two
carried quantities, `nextvalues` and `lastgaelam`, and on a position the mask leaves out it keeps both
unchanged ("skip values and TD-error on observation tokens"); a prefix mask thus makes V and A exactly 0
past the last real token. Its `masked_whiten` (verl/utils/torch_functional.py) uses `masked_mean` and the
Bessel-corrected `masked_var`, which raises on a single real token. The mask is blended with `torch.where`
rather than multiplied, so that junk in the padding never reaches a real position. Book §5.5, eq. 5.11.
"""
EXERCISE = "ex4_gae"
DESCRIPTION = "compute_gae / whiten as verl's core_algos (reverse loop carrying nextvalues and lastgaelam, masked_whiten)"

import torch


def masked_mean(values, mask, axis=None):
    """Mean of `values` over the positions where `mask` is true (verl_F.masked_mean)."""
    valid = torch.where(mask.bool(), values, torch.zeros((), dtype=values.dtype, device=values.device))
    return valid.sum(axis) / mask.bool().sum(axis)


def masked_var(values, mask, unbiased=True):
    """Variance over the real positions, Bessel-corrected (verl_F.masked_var)."""
    mean = masked_mean(values, mask)
    variance = masked_mean((values - mean) ** 2, mask)
    if unbiased:
        mask_sum = int(mask.bool().sum())
        if mask_sum < 2:
            raise ValueError(f"masked_var: the mask selects {mask_sum} element(s); an unbiased variance needs 2")
        variance = variance * (mask_sum / (mask_sum - 1))
    return variance


def compute_gae(rewards, values, mask, gamma=1.0, lam=0.95):
    if rewards.dim() != 2 or rewards.shape != values.shape or rewards.shape != mask.shape:
        raise ValueError(f"rewards, values and mask must share one [batch, resp_len] shape, got "
                         f"{tuple(rewards.shape)}, {tuple(values.shape)}, {tuple(mask.shape)}")
    with torch.no_grad():
        token_level_rewards = rewards
        values = values.to(rewards.dtype)
        response_mask = mask.bool()
        nextvalues = torch.zeros_like(rewards[:, 0])
        lastgaelam = torch.zeros_like(rewards[:, 0])
        advantages_reversed = []
        gen_len = token_level_rewards.shape[-1]
        for t in reversed(range(gen_len)):
            delta = token_level_rewards[:, t] + gamma * nextvalues - values[:, t]
            lastgaelam_ = delta + gamma * lam * lastgaelam
            # skip values and TD-error on positions outside the response
            nextvalues = torch.where(response_mask[:, t], values[:, t], nextvalues)
            lastgaelam = torch.where(response_mask[:, t], lastgaelam_, lastgaelam)
            advantages_reversed.append(lastgaelam)
        advantages = torch.stack(advantages_reversed[::-1], dim=1)
        returns = advantages + values
    return advantages, returns


def whiten(x, mask, shift_mean=True):
    if x.shape != mask.shape:
        raise ValueError(f"x shape {tuple(x.shape)} != mask shape {tuple(mask.shape)}")
    mean, var = masked_mean(x, mask), masked_var(x, mask)
    whitened = (x - mean) * torch.rsqrt(var + 1e-8)
    if not shift_mean:
        whitened += mean
    return whitened
