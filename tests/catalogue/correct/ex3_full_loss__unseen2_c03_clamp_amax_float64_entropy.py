"""Correct variant (c03 of the unseen2 set, written outside the project from the docstrings
alone): Value clip written as clamp(V, V_old − c, V_old + c) with a stacked `amax`; entropy as logsumexp(z) − Σ softmax(z)·z in float64, cast back; masked means by boolean selection.
"""
EXERCISE = "ex3_full_loss"
DESCRIPTION = "c03: Value clip written as clamp(V, V_old − c, V_old + c) with a stacked `amax`; entropy as logsumexp(z) − Σ softmax(z)·z in float64, cast back; masked means by boolean selection"

import torch

__all__ = ["clipped_value_loss", "entropy_from_logits", "ppo_loss", "masked_mean"]


def masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Token-level masked mean (given, as in exercise 2): Σ over real tokens / number of real tokens.

    Args:
        x: Float[batch, resp_len]; mask: [batch, resp_len] bool/int/float in {0, 1}.

    Returns:
        0-dim tensor in the dtype and on the device of ``x``; padding gets exactly 0 gradient.
    """
    real = mask.bool()
    return torch.where(real, x, torch.zeros((), dtype=x.dtype, device=x.device)).sum() / real.sum()


def clipped_value_loss(
    values: torch.Tensor,
    old_values: torch.Tensor,
    returns: torch.Tensor,
    mask: torch.Tensor,
    clip_range_value: float = 0.2,
) -> torch.Tensor:
    """Clipped value loss L^VF (the c₁ term of Book eq. 5.2), no ½ factor.

    L^VF = masked_mean( max( (V − R)², (V_old + clip(V − V_old, −c, c) − R)² ) ),
    the pessimistic max, as in PPO's and TRL's value clipping.

    Args:
        values: Float[batch, resp_len], V_θ(s_t) from the live value head (gradient flows).
        old_values: Float[batch, resp_len], V(s_t) stored at rollout time (a constant).
        returns: Float[batch, resp_len], the targets R_t = Â_t + V_old (a constant).
        mask: [batch, resp_len] bool/int/float, 1 on real tokens.
        clip_range_value: c, the book's ``cliprange_value`` (0.2).

    Returns:
        0-dim tensor, dtype/device of ``values``, differentiable w.r.t. ``values`` only.

    Raises:
        ValueError: if the four tensors do not share one shape.

    Example (token 1: V = 1.5, V_old = 1.0, R = 2 → max(0.25, (1.2 − 2)²) = 0.64;
    token 2: V = V_old = 0, R = 1 → 1; mean = 0.82):
        >>> import torch
        >>> v = torch.tensor([[1.5, 0.0]], dtype=torch.float64)
        >>> v_old = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
        >>> ret = torch.tensor([[2.0, 1.0]], dtype=torch.float64)
        >>> round(clipped_value_loss(v, v_old, ret, torch.tensor([[True, True]])).item(), 6)
        0.82
    """
    if not (values.shape == old_values.shape == returns.shape == mask.shape):
        raise ValueError("values, old_values, returns and mask must share one shape")
    v_old = old_values.detach()
    target = returns.detach()
    v_clip = torch.clamp(values, v_old - clip_range_value, v_old + clip_range_value)
    worst = torch.stack([(values - target).square(), (v_clip - target).square()]).amax(dim=0)
    keep = mask.bool()
    return worst[keep].sum() / keep.sum()


def entropy_from_logits(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Masked mean of the per-token entropy H[π_θ(·|s_t)] = −Σ_v p_v log p_v (the c₂ term of Book eq. 5.2).

    Must be stable for (finite) logits of any size: a token with p_v ≈ 0 must
    contribute 0, not nan.

    Args:
        logits: Float[batch, resp_len, vocab], the live policy's logits.
        mask: [batch, resp_len] bool/int/float, 1 on real tokens.

    Returns:
        0-dim tensor in nats, dtype/device of ``logits``, differentiable w.r.t. ``logits``.

    Raises:
        ValueError: if ``mask.shape != logits.shape[:2]``.

    Example (uniform over 4 tokens: H = log 4 ≈ 1.386294; the padded token does not count):
        >>> import torch
        >>> logits = torch.stack([torch.zeros(4), torch.tensor([20.0, -20.0, 0.0, 0.0])]).view(1, 2, 4)
        >>> round(entropy_from_logits(logits, torch.tensor([[1.0, 0.0]])).item(), 5)
        1.38629
    """
    if logits.ndim != 3 or tuple(mask.shape) != tuple(logits.shape[:2]):
        raise ValueError("need logits [B, T, V] and mask [B, T]")
    z = logits.double()
    p = torch.softmax(z, dim=-1)
    ent = torch.logsumexp(z, dim=-1) - (p * z).sum(dim=-1)       # H = log Σe^z − E_p[z]
    keep = mask.bool()
    return (ent[keep].sum() / keep.sum()).to(logits.dtype)


def ppo_loss(
    logp_new: torch.Tensor,
    logp_old: torch.Tensor,
    advantages: torch.Tensor,
    values: torch.Tensor,
    old_values: torch.Tensor,
    returns: torch.Tensor,
    logits: torch.Tensor,
    mask: torch.Tensor,
    clip_eps: float = 0.2,
    clip_range_value: float = 0.2,
    vf_coef: float = 0.1,
    ent_coef: float = 0.01,
) -> tuple[torch.Tensor, dict[str, float]]:
    """The full PPO loss of Book eq. 5.2, to minimise: −L^CLIP + vf_coef·L^VF − ent_coef·H.

    The policy term is exactly exercise 2's ``clipped_surrogate_loss``
    (−masked_mean(min(r·Â, clip(r, 1−ε, 1+ε)·Â)), gradients as eq. 5.9); the value term is
    ``clipped_value_loss``; the entropy is ``entropy_from_logits``.

    Args:
        logp_new: Float[batch, resp_len], log π_θ of the taken tokens (gradient flows).
        logp_old: Float[batch, resp_len], log π_θold (constant).
        advantages: Float[batch, resp_len], Â (constant, normally whitened).
        values: Float[batch, resp_len], V_θ from the live value head (gradient flows).
        old_values: Float[batch, resp_len], V at rollout time (constant).
        returns: Float[batch, resp_len], value targets (constant).
        logits: Float[batch, resp_len, vocab], the live logits (for the entropy).
        mask: [batch, resp_len] bool/int/float, 1 on real tokens.
        clip_eps, clip_range_value, vf_coef, ent_coef: ε, c, c₁, c₂ (book: 0.2, 0.2, 0.1, 0.01).

    Returns:
        (loss, stats): ``loss`` a 0-dim tensor (dtype/device of ``logp_new``,
        differentiable w.r.t. ``logp_new``, ``values`` and ``logits``); ``stats``
        a dict of Python floats with at least
        ``approx_kl`` = masked_mean(½(logp_new − logp_old)²) (TRL's definition) and
        ``clipfrac`` = masked_mean([Â·clip(r, 1−ε, 1+ε) < Â·r]) (the tokens where the
        clip binds), plus ``policy_loss``, ``value_loss``, ``entropy`` and ``loss``.

    Raises:
        ValueError: if the token-level shapes differ or ``logits`` does not match them.

    Example (r = 1, V = R, logits uniform over 2 tokens: loss = −0.01·log 2):
        >>> import torch
        >>> z = torch.zeros(1, 2, dtype=torch.float64)
        >>> adv = torch.tensor([[1.0, -1.0]], dtype=torch.float64)
        >>> loss, stats = ppo_loss(z, z, adv, z, z, z, torch.zeros(1, 2, 2, dtype=torch.float64), torch.ones(1, 2))
        >>> round(loss.item(), 6), stats["approx_kl"], stats["clipfrac"]
        (-0.006931, 0.0, 0.0)
    """
    tensors = (logp_new, logp_old, advantages, values, old_values, returns, mask)
    if len({t.shape for t in tensors}) != 1 or logits.shape[:2] != mask.shape:
        raise ValueError(
            "logp_new, logp_old, advantages, values, old_values, returns, mask must share one "
            f"[batch, resp_len] shape and logits be [batch, resp_len, vocab]; got "
            f"{[tuple(t.shape) for t in tensors]} and logits {tuple(logits.shape)}"
        )
    logp_old, adv = logp_old.detach(), advantages.detach()
    ratio = torch.exp(logp_new - logp_old)  # (B, T), Book eq. 5.20
    unclipped = ratio * adv
    clipped = torch.clamp(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * adv
    # Eq. 5.9's cases, boundaries included: where the clip binds the clipped term is a constant.
    binds = ((adv > 0) & (ratio >= 1.0 + clip_eps)) | ((adv < 0) & (ratio <= 1.0 - clip_eps))
    policy_loss = -masked_mean(torch.where(binds, clipped.detach(), unclipped), mask)  # −L^CLIP, eq. 5.1
    value_loss = clipped_value_loss(values, old_values, returns, mask, clip_range_value)
    entropy = entropy_from_logits(logits, mask)
    loss = policy_loss + vf_coef * value_loss - ent_coef * entropy  # minimising it maximises eq. 5.2

    with torch.no_grad():
        approx_kl = masked_mean(0.5 * (logp_new - logp_old) ** 2, mask)
        clipfrac = masked_mean((clipped < unclipped).to(unclipped.dtype), mask)
    stats = {
        "approx_kl": approx_kl.item(),
        "clipfrac": clipfrac.item(),
        "policy_loss": policy_loss.item(),
        "value_loss": value_loss.item(),
        "entropy": entropy.item(),
        "loss": loss.item(),
    }
    return loss, stats
