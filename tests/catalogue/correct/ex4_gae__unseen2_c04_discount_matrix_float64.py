"""Correct variant (c04 of the unseen2 set, written outside the project from the docstrings
alone): Vectorised GAE through an upper-triangular discount matrix (A = δ · Dᵀ with D[s,u] = (γλ)^(u−s)), float64 inside; whiten via boolean selection and `torch.var(unbiased=True)` in float64, cast back.
"""
EXERCISE = "ex4_gae"
DESCRIPTION = "c04: Vectorised GAE through an upper-triangular discount matrix (A = δ · Dᵀ with D[s,u] = (γλ)^(u−s)), float64 inside; whiten via boolean selection and `torch.var(unbiased=True)` in float64, cast back"

import torch

__all__ = ["compute_gae", "whiten"]


def compute_gae(
    rewards: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor,
    gamma: float = 1.0,
    lam: float = 0.95,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalised advantage estimates over response tokens (Book §5.5; GAE, Schulman et al. 2016).

    δ_t = r_t + γ·V_{t+1} − V_t and A_t = δ_t + γλ·A_{t+1}, with V and A taken
    as 0 past each row's last real token (junk in the padding must not leak in).

    Args:
        rewards: Float[batch, resp_len], the shaped per-token rewards (exercise 6).
        values: Float[batch, resp_len], V(s_t) from the value head at rollout time.
        mask: [batch, resp_len] bool/int/float, 1 on real tokens, a prefix per row.
        gamma: discount γ; 1.0 for single-turn RLHF (Book §5.8 config).
        lam: GAE λ; 0.95 in the book's config.

    Returns:
        (advantages, returns), each Float[batch, resp_len] in the dtype/device of
        ``rewards``, detached (no gradient flows into either);
        returns = advantages + values. Padding positions are unspecified.

    Raises:
        ValueError: if the three shapes differ or the tensors are not 2-D.

    Example (γ = 1, λ = 0.5, rewards (0, 0, 1), V = 0.5 everywhere, 4th token padding:
    δ = (0, 0, 0.5) → A_2 = 0.5, A_1 = 0 + 0.5·0.5 = 0.25, A_0 = 0.125):
        >>> import torch
        >>> r = torch.tensor([[0.0, 0.0, 1.0, 9.0]], dtype=torch.float64)
        >>> v = torch.tensor([[0.5, 0.5, 0.5, -7.0]], dtype=torch.float64)
        >>> adv, ret = compute_gae(r, v, torch.tensor([[1, 1, 1, 0]]), gamma=1.0, lam=0.5)
        >>> adv[0, :3].tolist(), ret[0, :3].tolist()
        ([0.125, 0.25, 0.5], [0.625, 0.75, 1.0])
    """
    if rewards.ndim != 2 or values.shape != rewards.shape or mask.shape != rewards.shape:
        raise ValueError("rewards, values and mask must be 2-D with one shape")
    B, T = rewards.shape
    keep = mask.bool()
    r = rewards.detach().double().masked_fill(~keep, 0.0)
    v = values.detach().double().masked_fill(~keep, 0.0)
    v_next = torch.cat([v[:, 1:], torch.zeros_like(v[:, :1])], dim=1)
    delta = r + gamma * v_next - v                                    # (B, T), 0 on padding
    t = torch.arange(T, device=rewards.device)
    k = (t[None, :] - t[:, None]).double()                            # k[s, u] = u − s
    disc = torch.where(k >= 0, (gamma * lam) ** k.clamp(min=0), torch.zeros_like(k))
    adv64 = delta @ disc.T                                            # A_s = Σ_u (γλ)^(u−s) δ_u
    advantages = adv64.to(rewards.dtype)
    returns = (adv64 + values.detach().double()).to(rewards.dtype)
    return advantages, returns


def whiten(x: torch.Tensor, mask: torch.Tensor, shift_mean: bool = True) -> torch.Tensor:
    """Whiten over the real tokens of the whole batch (Book §5.5: "advantages are whitened").

    (x − μ) / sqrt(σ² + 1e-8), where μ is the masked mean and σ² the masked
    *unbiased* variance (Σ(x − μ)² / (n − 1)) over all real tokens; with
    ``shift_mean=False`` μ is added back (scale only), as TRL's
    ``masked_whiten`` does for ``whiten_rewards``.

    Args:
        x: Float[batch, resp_len].
        mask: [batch, resp_len] bool/int/float, 1 on real tokens.
        shift_mean: if False, keep the original mean.

    Returns:
        Float[batch, resp_len], dtype/device of ``x``. Padding positions are unspecified.

    Raises:
        ValueError: if the shapes differ, or the mask selects fewer than 2
            elements (the unbiased variance is undefined).

    Example (real tokens 1, 2, 3: μ = 2, σ² = (1 + 0 + 1)/2 = 1):
        >>> import torch
        >>> x = torch.tensor([[1.0, 2.0, 3.0, 15.0]], dtype=torch.float64)
        >>> m = torch.tensor([[1, 1, 1, 0]])
        >>> torch.round(whiten(x, m)[0, :3], decimals=6).tolist()
        [-1.0, 0.0, 1.0]
        >>> torch.round(whiten(x, m, shift_mean=False)[0, :3], decimals=6).tolist()
        [1.0, 2.0, 3.0]
    """
    if x.shape != mask.shape:
        raise ValueError("x and mask must have the same shape")
    sel = x[mask.bool()].double()
    if sel.numel() < 2:
        raise ValueError("whiten needs at least 2 real tokens")
    mu = sel.mean()
    sd = torch.sqrt(sel.var(unbiased=True) + 1e-8)
    out = (x.double() - mu) / sd
    if not shift_mean:
        out = out + mu
    return out.to(x.dtype)
