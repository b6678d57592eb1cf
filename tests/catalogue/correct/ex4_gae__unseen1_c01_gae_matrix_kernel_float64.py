"""Correct variant (c01 of the landing-7 unseen set, written outside the project from the docstrings
alone): GAE as one matrix product with a (γλ)^(s−t) upper-triangular kernel in float64 (no time loop), whitening by boolean selection in float64, cast back.
"""
EXERCISE = "ex4_gae"
DESCRIPTION = "c01: GAE as one matrix product with a (γλ)^(s−t) upper-triangular kernel in float64, whitening by boolean selection"

import torch


def compute_gae(
    rewards: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor,
    gamma: float = 1.0,
    lam: float = 0.95,
) -> tuple[torch.Tensor, torch.Tensor]:
    if rewards.dim() != 2 or rewards.shape != values.shape or rewards.shape != mask.shape:
        raise ValueError(f"rewards, values and mask must share one 2-D shape, got {tuple(rewards.shape)}, {tuple(values.shape)}, {tuple(mask.shape)}")
    real = mask.bool()
    r64 = rewards.detach().to(torch.float64).masked_fill(~real, 0.0)
    v64 = values.detach().to(torch.float64).masked_fill(~real, 0.0)
    T = r64.shape[1]
    v_next = torch.cat([v64[:, 1:], torch.zeros_like(v64[:, :1])], dim=1)
    delta = r64 + gamma * v_next - v64  # (B, T); 0 past the last real token
    idx = torch.arange(T, device=rewards.device)
    k = (idx.view(1, T) - idx.view(T, 1)).to(torch.float64)  # k[t, s] = s - t
    gl = torch.tensor(float(gamma) * float(lam), dtype=torch.float64, device=rewards.device)
    weights = torch.where(k >= 0, torch.where(k == 0, torch.ones_like(k), gl ** k.clamp(min=0)), torch.zeros_like(k))
    adv64 = delta @ weights.T  # A_t = sum_{s>=t} (gamma*lam)^(s-t) delta_s
    advantages = adv64.to(rewards.dtype)
    returns = (adv64 + values.detach().to(torch.float64)).to(rewards.dtype)
    return advantages, returns


def whiten(x: torch.Tensor, mask: torch.Tensor, shift_mean: bool = True) -> torch.Tensor:
    if x.shape != mask.shape:
        raise ValueError(f"x shape {tuple(x.shape)} != mask shape {tuple(mask.shape)}")
    sel = x.to(torch.float64)[mask.bool()]
    if sel.numel() < 2:
        raise ValueError(f"whiten needs at least 2 real tokens, the mask selects {sel.numel()}")
    mu = sel.mean()
    var = torch.var(sel, unbiased=True)
    out = (x.to(torch.float64) - mu) / torch.sqrt(var + 1e-8)
    if not shift_mean:
        out = out + mu
    return out.to(x.dtype)
