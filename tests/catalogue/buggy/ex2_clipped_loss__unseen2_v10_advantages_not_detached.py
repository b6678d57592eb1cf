"""Buggy (v10 of the unseen2 set, written outside the project from the docstrings alone):
Advantages are not detached.

Clause broken: “advantages: Float[batch, resp_len], Â_t (a constant: detached) ... differentiable w.r.t. ``logp_new`` only”
Expected diagnosis (the set's manifest): Gradient flows into the advantages. Treat Â as a constant and detach it.
Graded as: gradient_into_constants.
"""
EXERCISE = "ex2_clipped_loss"
DIAGNOSIS = "gradient_into_constants"
DESCRIPTION = "Advantages are not detached"
SEEN_IN = "the unseen2 set (v10), written outside the project from the docstrings alone"


def clipped_surrogate_loss(
    logp_new: torch.Tensor,
    logp_old: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    clip_eps: float = 0.2,
) -> torch.Tensor:
    shapes = {t.shape for t in (logp_new, logp_old, advantages, mask)}
    if len(shapes) != 1:
        raise ValueError(
            "logp_new, logp_old, advantages and mask must share one [batch, resp_len] shape, got "
            f"{[tuple(t.shape) for t in (logp_new, logp_old, advantages, mask)]}"
        )
    # The data were collected by π_θold and Â was computed once per rollout: both are constants.
    ratio = torch.exp(logp_new - logp_old.detach())  # (B, T), Book eq. 5.20
    adv = advantages
    unclipped = ratio * adv  # (B, T)
    clipped = torch.clamp(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * adv  # (B, T)
    # Book eq. 5.9: the clip binds when Â > 0 and r ≥ 1+ε, or Â < 0 and r ≤ 1−ε; there
    # min(r·Â, clip(r)·Â) is the clipped term, a constant. Choosing the term explicitly
    # (not torch.minimum) also gives gradient 0 *at* r = 1±ε, where minimum would split a tie.
    binds = ((adv > 0) & (ratio >= 1.0 + clip_eps)) | ((adv < 0) & (ratio <= 1.0 - clip_eps))
    objective = torch.where(binds, clipped.detach(), unclipped)  # (B, T) = min(r·Â, clip(r)·Â)
    return -masked_mean(objective, mask)
