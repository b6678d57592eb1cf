"""Stop 5: generalised advantage estimation and advantage whitening (Book §5.5, fig. 5.1; GAE, Schulman et al. 2016)."""

from __future__ import annotations

import numbers

import torch

from ppo_reference.masked import check_floating, count_at_least, whiten_over, check_same_shape, token_mask

__all__ = ["compute_gae", "whiten"]

# Tokens per block of the blocked scan: each block is one [B, K] × [K, K]
# matmul, so a T-token scan costs T/K Python steps instead of T.
_BLOCK = 64


def _discount_matrix(decay: float, size: int, dtype, device) -> torch.Tensor:
    """W[j, k] = decay^(k − j) for k ≥ j, else 0: [size, size]."""
    idx = torch.arange(size, device=device)
    lag = idx.unsqueeze(0) - idx.unsqueeze(1)  # (K, K), lag[j, k] = k − j
    powers = torch.pow(torch.tensor(decay, dtype=dtype, device=device), lag.clamp(min=0).to(dtype))
    return torch.where(lag >= 0, powers, torch.zeros((), dtype=dtype, device=device))


def _discounted_reverse_cumsum(deltas: torch.Tensor, decay: float) -> torch.Tensor:
    """A_t = Σ_{k≥t} decay^(k−t)·δ_k along the last dim of [B, T], vectorised over B.

    Equivalent to the backward recursion A_t = δ_t + decay·A_{t+1}, A_T = 0,
    done one block of ``_BLOCK`` tokens at a time: inside a block the sum is a
    matmul with the discount matrix, and the block's first advantage is
    carried into the block before it (weight decay^(L−j) at local index j).
    """
    batch, length = deltas.shape
    size = min(_BLOCK, length)
    weights = _discount_matrix(decay, size, deltas.dtype, deltas.device)  # (K, K)
    advantages = torch.empty_like(deltas)
    carry = torch.zeros(batch, dtype=deltas.dtype, device=deltas.device)  # A at the next block's start
    for start in reversed(range(0, length, size)):
        stop = min(start + size, length)
        n = stop - start
        w = weights[:n, :n]  # a Toeplitz matrix: its top-left corner is the smaller block's
        carry_weight = torch.pow(
            torch.tensor(decay, dtype=deltas.dtype, device=deltas.device),
            torch.arange(n, 0, -1, device=deltas.device, dtype=deltas.dtype),
        )  # (n,), decay^(n − j)
        block = deltas[:, start:stop] @ w.T + carry.unsqueeze(1) * carry_weight  # (B, n)
        advantages[:, start:stop] = block
        carry = block[:, 0]
    return advantages


def _check_rate(where: str, **rates: float) -> None:
    for name, value in rates.items():
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"{where}: `{name}` must be a number, got {type(value).__name__}")
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{where}: `{name}` must be in [0, 1], got {value}")


def compute_gae(
    rewards: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor,
    gamma: float = 1.0,
    lam: float = 0.95,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalised advantage estimates over response tokens (Book §5.5, fig. 5.1; GAE, Schulman et al. 2016).

    δ_t = r_t + γ·V_{t+1} − V_t and A_t = δ_t + γλ·A_{t+1}, with V and A taken
    as 0 past each row's last real token: the response ends there, EOS or
    truncation alike, and nothing is bootstrapped. returns = A + V.
    This is what TRL 0.11's ``compute_advantages`` computes on real tokens (it
    multiplies ``values`` and ``rewards`` by the mask first, then scans; it
    also whitens the advantages inside, which here is a separate ``whiten``).
    CleanRL bootstraps from the value of the next state when a rollout
    segment ends mid-episode; here a row's last real token always ends the
    episode (a truncated response included), so nothing is bootstrapped.

    Computed in float64 (one blocked scan, vectorised over the batch) and cast
    back, so float32 results carry only the final rounding.

    Args:
        rewards: [batch, resp_len] float, the shaped per-token rewards.
        values: [batch, resp_len] float, V(s_t) from the value head at rollout time.
        mask: [batch, resp_len] bool/int/float, 1 on real tokens, a prefix per row.
        gamma: discount in [0, 1]; 1.0 for single-turn RLHF (Book §5.7).
        lam: GAE λ in [0, 1]; 0.95 in the book's config.

    Returns:
        (advantages, returns), each [batch, resp_len] in the dtype and device of
        ``rewards``, detached (no gradient flows into either). Both are 0 on
        padding (the contract leaves padding unspecified).

    Raises:
        TypeError: if the data is not floating or a rate is not a number.
        ValueError: if shapes or devices differ, the mask is bad (not 0/1, not
            a prefix, an empty row), or gamma/lam are outside [0, 1].
    """
    where = "compute_gae"
    check_same_shape(where, rewards=rewards, values=values)
    check_floating(where, rewards=rewards, values=values)
    _check_rate(where, gamma=gamma, lam=lam)
    m = token_mask(mask, rewards, where)
    with torch.no_grad():
        zero = torch.zeros((), dtype=torch.float64, device=rewards.device)
        r = torch.where(m, rewards.detach().double(), zero)  # (B, T), junk in padding dropped
        v = torch.where(m, values.detach().to(rewards.device).double(), zero)  # (B, T), V = 0 past the end
        v_next = torch.nn.functional.pad(v[:, 1:], (0, 1))  # (B, T), V_{t+1}; 0 after the last column
        deltas = r + gamma * v_next - v  # (B, T), 0 on padding
        advantages = _discounted_reverse_cumsum(deltas, gamma * lam)  # (B, T)
        returns = advantages + v
    return advantages.to(rewards.dtype), returns.to(rewards.dtype)


def whiten(x: torch.Tensor, mask: torch.Tensor, shift_mean: bool = True) -> torch.Tensor:
    """Whiten over the real tokens of the whole batch: (x − μ) / sqrt(σ² + 1e-8) (Book §5.5, "GAE advantages are whitened").

    μ is the token-level masked mean, σ² the masked *unbiased* variance
    (Bessel-corrected, n − 1, as TRL 0.11's ``masked_whiten``; a biased
    variance would differ by the factor n/(n − 1)). With ``shift_mean=False``
    μ is added back, so only the scale changes (TRL's ``whiten_rewards``).
    Statistics are taken in float64.

    Args:
        x: [batch, resp_len] float, e.g. advantages or rewards.
        mask: [batch, resp_len] bool/int/float prefix mask.
        shift_mean: subtract the mean (True, advantages) or keep it (False, rewards).

    Returns:
        [batch, resp_len] in ``x``'s dtype and device; differentiable in ``x``.
        Padding gets the same affine map (unspecified by the contract).

    Raises:
        TypeError / ValueError: non-float ``x``, shape or device mismatch, a bad
            mask, or a mask selecting fewer than 2 elements (the unbiased
            variance is undefined; TRL would return NaN).
    """
    where = "whiten"
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{where}: `x` must be a torch.Tensor, got {type(x).__name__}")
    check_floating(where, x=x)
    m = token_mask(mask, x, where)
    count = count_at_least(m, 2, where, "whitening uses the unbiased variance, which needs at least 2 real tokens")
    return whiten_over(x, m, count, shift_mean)
