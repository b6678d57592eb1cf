"""Buggy (v12 of the unseen2 set, written outside the project from the docstrings alone):
The clip-binding regions are swapped (Â > 0 with r ≤ 1−ε, Â < 0 with r ≥ 1+ε), so the result is not the min of the two terms.

Clause broken: “min( r·Â, clip(r, 1−ε, 1+ε)·Â ) ... with Â > 0 it flows while r < 1+ε and is 0 once r ≥ 1+ε”
Expected diagnosis (the set's manifest): The clipped term is chosen in the wrong regions. For Â > 0 the clip binds above 1+ε, for Â < 0 below 1−ε. Check min(r·Â, clip(r)·Â) against the four cases.
Graded as: max_instead_of_min.
"""
EXERCISE = "ex2_clipped_loss"
DIAGNOSIS = "max_instead_of_min"
DESCRIPTION = "The clip-binding regions are swapped (Â > 0 with r ≤ 1−ε, Â < 0 with r ≥ 1+ε), so the result is not the min of the two terms"
SEEN_IN = "the unseen2 set (v12), written outside the project from the docstrings alone"


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
    binds = ((adv > 0) & (ratio <= 1.0 - clip_eps)) | ((adv < 0) & (ratio >= 1.0 + clip_eps))
    objective = torch.where(binds, clipped.detach(), unclipped)  # (B, T) = min(r·Â, clip(r)·Â)
    return -masked_mean(objective, mask)
