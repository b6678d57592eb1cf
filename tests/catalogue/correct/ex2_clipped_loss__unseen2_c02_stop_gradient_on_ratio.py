"""Correct variant (c02 of the unseen2 set, written outside the project from the docstrings
alone): Stop-gradient applied to the ratio (r_eff = where(binds, clip(r).detach(), r)) before multiplying by Â; binding mask from nested `torch.where`; masked mean by boolean indexing (`x[mask.bool()].mean()`).
"""
EXERCISE = "ex2_clipped_loss"
DESCRIPTION = "c02: Stop-gradient applied to the ratio (r_eff = where(binds, clip(r).detach(), r)) before multiplying by Â; binding mask from nested `torch.where`; masked mean by boolean indexing (`x[mask.bool()].mean()`)"

import torch

__all__ = ["clipped_surrogate_loss", "masked_mean"]


def masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Token-level masked mean: Σ over real tokens of the whole batch / number of real tokens.

    Given (not an exercise): the averaging convention of every loss here, as
    TRL's ``masked_mean``. ``torch.where`` (not ``x * mask``) keeps junk in the
    padding out of the sum, and keeps its gradient exactly 0.

    Args:
        x: Float[batch, resp_len].
        mask: [batch, resp_len] bool/int/float in {0, 1}.

    Returns:
        0-dim tensor in the dtype and on the device of ``x``.

    Example:
        >>> masked_mean(torch.tensor([[1.0, 3.0, 7.0], [2.0, 9.0, 9.0]]), torch.tensor([[1, 1, 1], [1, 0, 0]]))
        tensor(3.2500)
    """
    real = mask.bool()
    return torch.where(real, x, torch.zeros((), dtype=x.dtype, device=x.device)).sum() / real.sum()


def clipped_surrogate_loss(
    logp_new: torch.Tensor,
    logp_old: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    clip_eps: float = 0.2,
) -> torch.Tensor:
    """−L^CLIP: the negated clipped surrogate of Book eq. 5.1, masked-mean over real tokens.

    loss = −masked_mean( min( r·Â, clip(r, 1−ε, 1+ε)·Â ) ),  r = exp(logp_new − logp_old).
    Gradients obey the four cases of Book eq. 5.9: with Â > 0 it flows while
    r < 1+ε and is 0 once r ≥ 1+ε; with Â < 0 it flows while r > 1−ε and is 0
    once r ≤ 1−ε (boundaries included: at r = 1+ε exactly the gradient is 0).

    Args:
        logp_new: Float[batch, resp_len], log π_θ of the taken tokens (gradient flows).
        logp_old: Float[batch, resp_len], log π_θold from the buffer (a constant: detached).
        advantages: Float[batch, resp_len], Â_t (a constant: detached).
        mask: [batch, resp_len] bool/int/float, 1 on real tokens (prefix per row).
        clip_eps: ε of eq. 5.1 (the book's ``cliprange``, 0.2).

    Returns:
        0-dim tensor, dtype/device of ``logp_new``, differentiable w.r.t.
        ``logp_new`` only. Junk at padding changes neither value nor gradient.

    Raises:
        ValueError: if the four tensors do not share one shape.

    Example (token 1: r = 1.5, Â = 2 → min(3.0, 1.2·2) = 2.4; token 2:
    r = 0.5, Â = −1 → min(−0.5, 0.8·(−1)) = −0.8; token 3 is padding;
    loss = −(2.4 − 0.8)/2 = −0.8):
        >>> import math, torch
        >>> new = torch.tensor([[math.log(0.75), math.log(0.25), 17.0]], dtype=torch.float64)
        >>> old = torch.tensor([[math.log(0.5), math.log(0.5), -3.0]], dtype=torch.float64)
        >>> adv = torch.tensor([[2.0, -1.0, 20.0]], dtype=torch.float64)
        >>> round(clipped_surrogate_loss(new, old, adv, torch.tensor([[1, 1, 0]])).item(), 6)
        -0.8
    """
    if not (logp_new.shape == logp_old.shape == advantages.shape == mask.shape):
        raise ValueError("logp_new, logp_old, advantages and mask must share one shape")
    a = advantages.detach()
    r = (logp_new - logp_old.detach()).exp()
    lo, hi = 1.0 - clip_eps, 1.0 + clip_eps
    # where the clip binds (eq. 5.9, boundaries included) the ratio is frozen at its clipped value
    frozen = torch.where(a > 0, r >= hi, torch.where(a < 0, r <= lo, torch.zeros_like(r, dtype=torch.bool)))
    r_eff = torch.where(frozen, r.clamp(lo, hi).detach(), r)
    per_token = r_eff * a
    return -per_token[mask.bool()].mean()
