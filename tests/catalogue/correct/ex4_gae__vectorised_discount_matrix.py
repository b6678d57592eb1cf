"""Correct variant: GAE without a time loop, A = δ · D with D[k, t] = (γλ)^(k−t) for k ≥ t.

δ_t = r_t + γ·V_{t+1}·m_{t+1} − V_t on zero-padded r, V (masks are prefixes,
so m_{t+1} = 0 exactly where V_{t+1} lies past the end); δ is 0 on padding,
so the matrix product never reaches past a row's last real token.
"""
EXERCISE = "ex4_gae"
DESCRIPTION = "compute_gae vectorised as a product with an upper-triangular discount matrix; whiten in float64"

import torch


def compute_gae(rewards, values, mask, gamma=1.0, lam=0.95):
    if rewards.dim() != 2 or rewards.shape != values.shape or rewards.shape != mask.shape:
        raise ValueError("rewards, values and mask must be 2-D tensors of one shape")
    real = mask.bool()
    dtype = rewards.dtype
    r = torch.where(real, rewards.detach(), torch.zeros((), dtype=dtype)).to(torch.float64)
    v = torch.where(real, values.detach(), torch.zeros((), dtype=dtype)).to(torch.float64)
    T = r.shape[1]
    v_next = torch.cat([v[:, 1:], torch.zeros_like(v[:, :1])], dim=1)        # [B, T]
    delta = torch.where(real, r + gamma * v_next - v, torch.zeros_like(r))   # [B, T]
    k = torch.arange(T, dtype=torch.float64)
    power = k[:, None] - k[None, :]                                          # [T(k), T(t)] = k - t
    discount = torch.where(power >= 0, torch.pow(torch.tensor(gamma * lam, dtype=torch.float64),
                                                 power.clamp(min=0)), torch.zeros(()).double())
    advantages = delta @ discount                                            # [B, T]
    returns = advantages + v
    return advantages.to(dtype), returns.to(dtype)


def whiten(x, mask, shift_mean=True):
    if x.shape != mask.shape:
        raise ValueError("x and mask must have one shape")
    m = mask.to(torch.float64)
    n = m.sum()
    if n < 2:
        raise ValueError(f"whiten: the mask selects {int(n)} element(s), need at least 2")
    x64 = torch.where(mask.bool(), x.to(torch.float64), torch.zeros((), dtype=torch.float64))
    mean = x64.sum() / n
    var = ((x64 - mean) ** 2 * m).sum() / (n - 1)
    out = (x.to(torch.float64) - mean) / torch.sqrt(var + 1e-8)
    if not shift_mean:
        out = out + mean
    return out.to(x.dtype)
