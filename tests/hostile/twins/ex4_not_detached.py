# Honest twin (issue 19, class 3): the solution with the catalogue's `ex4_gae__not_detached` mistake appended (tests/catalogue/buggy).
"""Exercise 4 (stop 5): generalised advantage estimation and whitening.

Book §5.5 (fig. 5.1, "GAE advantages are whitened to zero mean and unit
variance"), with GAE from chapter 3 / Schulman et al. 2016:
δ_t = r_t + γ·V(s_{t+1}) − V(s_t),   Â_t = δ_t + γλ·Â_{t+1},
computed backwards over each response. The response ends at its last real
token (EOS or truncation): V and Â past it are 0, nothing is bootstrapped.

Conventions (all exercises): token-level tensors are [batch, resp_len],
right-padded; `mask` is bool/int/float, 1 on real tokens, a prefix per row;
padding holds finite junk (|x| ≤ 20), never 0 by courtesy.
"""

from __future__ import annotations

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
    ### BEGIN SOLUTION
    # TODO: implement Book §5.5's backward GAE recursion delta_t = r_t + gamma*V_{t+1} - V_t, A_t = delta_t + gamma*lam*A_{t+1}, with V and A = 0 past each row's last real token; return (advantages, advantages + values), both detached.
    if rewards.dim() != 2 or rewards.shape != values.shape or rewards.shape != mask.shape:
        raise ValueError(
            "rewards, values and mask must share one [batch, resp_len] shape, got "
            f"{tuple(rewards.shape)}, {tuple(values.shape)}, {tuple(mask.shape)}"
        )
    with torch.no_grad():
        real = mask.bool()
        zero = torch.zeros((), dtype=rewards.dtype, device=rewards.device)
        # Zeroing the padding makes "V and A are 0 past the last real token" automatic:
        # at the last real token V_{t+1} = 0, and every padded δ (hence A) is 0.
        r = torch.where(real, rewards, zero)
        v = torch.where(real, values.to(rewards.dtype), zero)
        resp_len = rewards.shape[1]
        next_value = torch.zeros_like(r[:, 0])  # (B,)
        next_adv = torch.zeros_like(r[:, 0])  # (B,)
        advantages_reversed = []
        for t in reversed(range(resp_len)):
            delta = r[:, t] + gamma * next_value - v[:, t]  # (B,)
            next_adv = delta + gamma * lam * next_adv
            next_value = v[:, t]
            advantages_reversed.append(next_adv)
        advantages = torch.stack(advantages_reversed[::-1], dim=1)  # (B, T)
        returns = advantages + values.to(rewards.dtype)
    return advantages, returns
    ### END SOLUTION


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
    ### BEGIN SOLUTION
    # TODO: implement (x - masked mean) / sqrt(masked unbiased variance + 1e-8) over all real tokens (add the mean back if not shift_mean); raise ValueError if the shapes differ or the mask selects fewer than 2 elements.
    if x.shape != mask.shape:
        raise ValueError(f"x shape {tuple(x.shape)} != mask shape {tuple(mask.shape)}")
    real = mask.bool()
    n = int(real.sum())
    if n < 2:
        raise ValueError(f"whiten needs at least 2 real tokens for an unbiased variance; the mask selects {n}")
    zero = torch.zeros((), dtype=x.dtype, device=x.device)
    mean = torch.where(real, x, zero).sum() / n
    var = torch.where(real, (x - mean) ** 2, zero).sum() / (n - 1)  # Bessel's correction, as TRL
    whitened = (x - mean) * torch.rsqrt(var + 1e-8)
    if not shift_mean:
        whitened = whitened + mean
    return whitened
    ### END SOLUTION


# ---- the mistake (tests/catalogue/buggy/ex4_gae__not_detached.py) ----

import torch


def compute_gae(rewards, values, mask, gamma=1.0, lam=0.95):
    m = mask.to(rewards.dtype)
    r = rewards * m
    v = values * m
    T = r.shape[1]
    last = torch.zeros_like(r[:, 0])
    out = [None] * T
    for t in reversed(range(T)):
        nextv = v[:, t + 1] if t < T - 1 else torch.zeros_like(last)
        delta = r[:, t] + gamma * nextv - v[:, t]
        last = (delta + gamma * lam * last) * m[:, t]
        out[t] = last
    adv = torch.stack(out, dim=1)
    return adv, adv + v
