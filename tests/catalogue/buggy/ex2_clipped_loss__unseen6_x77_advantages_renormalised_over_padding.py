"""Buggy (x77 of the unseen6 set, written outside the project from the docstrings alone):
The loss standardises the advantages over every position, padding included, before using them.

Clause broken: “the loss uses the given advantages; whitening happens once per batch in ex7”
Expected diagnosis (the set's manifest): use the advantages as given
Graded as: advantages_renormalised (landing 10's grader said only wrong_value and not_finite).
"""
import torch

EXERCISE = "ex2_clipped_loss"
DIAGNOSIS = "advantages_renormalised"
DESCRIPTION = "the loss standardises the advantages over every position, padding included, before using them"
SEEN_IN = "the unseen6 set (x77), written outside the project from the docstrings alone"
ALSO = "not_finite"  # a one-token row has zero variance: the standardised advantages are nan


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
    ### BEGIN SOLUTION
    # TODO: implement -masked_mean(min(r*A, clip(r, 1-eps, 1+eps)*A)) with r = exp(logp_new - logp_old) (Book eq. 5.1), with zero gradient where the clip binds (eq. 5.9, r = 1 +/- eps included); detach logp_old and advantages, average over the real tokens of the whole batch, raise ValueError on mismatched shapes.
    shapes = {t.shape for t in (logp_new, logp_old, advantages, mask)}
    if len(shapes) != 1:
        raise ValueError(
            "logp_new, logp_old, advantages and mask must share one [batch, resp_len] shape, got "
            f"{[tuple(t.shape) for t in (logp_new, logp_old, advantages, mask)]}"
        )
    # The data were collected by π_θold and Â was computed once per rollout: both are constants.
    ratio = torch.exp(logp_new - logp_old.detach())  # (B, T), Book eq. 5.20
    adv = advantages.detach()
    adv = (adv - adv.mean()) / (adv.std() + 1e-8)  # normalize advantages (SB3 normalize_advantage)
    unclipped = ratio * adv  # (B, T)
    clipped = torch.clamp(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * adv  # (B, T)
    # Book eq. 5.9: the clip binds when Â > 0 and r ≥ 1+ε, or Â < 0 and r ≤ 1−ε; there
    # min(r·Â, clip(r)·Â) is the clipped term, a constant. Choosing the term explicitly
    # (not torch.minimum) also gives gradient 0 *at* r = 1±ε, where minimum would split a tie.
    binds = ((adv > 0) & (ratio >= 1.0 + clip_eps)) | ((adv < 0) & (ratio <= 1.0 - clip_eps))
    objective = torch.where(binds, clipped.detach(), unclipped)  # (B, T) = min(r·Â, clip(r)·Â)
    return -masked_mean(objective, mask)
