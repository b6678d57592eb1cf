# Exercise stub (ex4_gae.py): write your code here. Replace each `raise NotImplementedError(...)` with
# your code; keep the names and signatures (the graders call them).
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
    # TODO: implement Book §5.5's backward GAE recursion delta_t = r_t + gamma*V_{t+1} - V_t, A_t = delta_t + gamma*lam*A_{t+1}, with V and A = 0 past each row's last real token; return (advantages, advantages + values), both detached.
    raise NotImplementedError("ex4_gae.compute_gae: implement Book §5.5's backward GAE recursion delta_t = r_t + gamma*V_{t+1} - V_t, A_t = delta_t + gamma*lam*A_{t+1}, with V and A = 0 past each row's last real token; return (advantages, advantages + values), both detached.")


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
    # TODO: implement (x - masked mean) / sqrt(masked unbiased variance + 1e-8) over all real tokens (add the mean back if not shift_mean); raise ValueError if the shapes differ or the mask selects fewer than 2 elements.
    raise NotImplementedError('ex4_gae.whiten: implement (x - masked mean) / sqrt(masked unbiased variance + 1e-8) over all real tokens (add the mean back if not shift_mean); raise ValueError if the shapes differ or the mask selects fewer than 2 elements.')
