"""Correct variant: last-token placement with scatter_add, and a controller written with sorted()."""
EXERCISE = "ex6_kl_reward"
DESCRIPTION = "kl_shaped_rewards with scatter_add onto the last real token; AdaptiveKLController via sorted() clip"

import torch


def per_token_kl(logp, ref_logp, mask):
    if logp.shape != ref_logp.shape or logp.shape != mask.shape:
        raise ValueError("logp, ref_logp and mask must share one shape")
    kl = (logp.detach() - ref_logp.detach()) * mask.to(logp.dtype)
    return torch.where(mask.bool(), kl, torch.zeros_like(kl))   # exact 0 even if the junk is huge


def kl_shaped_rewards(scores, logp, ref_logp, mask, kl_coef=0.05, placement="per_token"):
    if scores.dim() != 1 or logp.dim() != 2 or scores.shape[0] != logp.shape[0] \
            or logp.shape != ref_logp.shape or logp.shape != mask.shape:
        raise ValueError("scores must be [B] and logp, ref_logp, mask one [B, T] shape")
    if placement not in ("per_token", "last_token"):
        raise ValueError(f"placement must be 'per_token' or 'last_token', got {placement!r}")
    kl = per_token_kl(logp, ref_logp, mask)                       # [B, T]
    real = mask.bool()
    last = (real.sum(dim=1, keepdim=True) - 1)                    # [B, 1]
    scores = scores.detach().to(kl.dtype).reshape(-1, 1)          # [B, 1]
    if placement == "per_token":
        base, at_end = -kl_coef * kl, scores
    else:
        mean_kl = kl.sum(1, keepdim=True) / real.sum(1, keepdim=True).to(kl.dtype)
        base, at_end = torch.zeros_like(kl), scores - kl_coef * mean_kl
    return base.scatter_add(1, last, at_end)


class AdaptiveKLController:
    def __init__(self, init_kl_coef=0.05, target=6.0, horizon=10000):
        if target <= 0 or horizon <= 0:
            raise ValueError("target and horizon must be positive")
        self.value = float(init_kl_coef)
        self.target, self.horizon = target, horizon

    def update(self, current_kl, n_steps):
        error = sorted((-0.2, float(current_kl) / self.target - 1.0, 0.2))[1]   # the median = the clip
        self.value = self.value * (1.0 + error * n_steps / self.horizon)
