"""Buggy (v08 of the unseen2 set, written outside the project from the docstrings alone):
`torch.minimum(unclipped, clipped)` (TRL style) instead of choosing the clipped branch where the clip binds; at r = 1±ε exactly the tie lets gradient through.

Clause broken: “boundaries included: at r = 1+ε exactly the gradient is 0”
Expected diagnosis (the set's manifest): Values are right, but at exactly r = 1+ε (or 1−ε) your gradient is not 0. At the tie `min` splits the gradient between the two branches. Pick the clipped (constant) term wherever the clip binds, boundary included.
Graded as: not caught, by decision (a strict known gap, like unseen1's u12): the values are the solution's
everywhere; only the gradient at r = 1 ± ε exactly differs, a docstring promise that is deliberately ungraded.
"""
EXERCISE = "ex2_clipped_loss"
DIAGNOSIS = "wrong_value"
DESCRIPTION = "`torch.minimum(unclipped, clipped)` (TRL style) instead of choosing the clipped branch where the clip binds; at r = 1±ε exactly the tie lets gradient through"
SEEN_IN = "the unseen2 set (v08), written outside the project from the docstrings alone"


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
    adv = advantages.detach()
    unclipped = ratio * adv  # (B, T)
    clipped = torch.clamp(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * adv  # (B, T)
    # Book eq. 5.9: the clip binds when Â > 0 and r ≥ 1+ε, or Â < 0 and r ≤ 1−ε; there
    # min(r·Â, clip(r)·Â) is the clipped term, a constant. Choosing the term explicitly
    # (not torch.minimum) also gives gradient 0 *at* r = 1±ε, where minimum would split a tie.
    binds = ((adv > 0) & (ratio >= 1.0 + clip_eps)) | ((adv < 0) & (ratio <= 1.0 - clip_eps))
    objective = torch.minimum(unclipped, clipped)  # (B, T) = min(r·Â, clip(r)·Â)
    return -masked_mean(objective, mask)
