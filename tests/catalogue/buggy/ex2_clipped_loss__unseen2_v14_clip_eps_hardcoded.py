"""Buggy (v14 of the unseen2 set, written outside the project from the docstrings alone):
ε is hard-coded to 0.2, so the `clip_eps` argument is ignored.

Clause broken: “clip_eps: ε of eq. 5.1 (the book's ``cliprange``, 0.2).”
Expected diagnosis (the set's manifest): Your loss is right for ε = 0.2 only. Use the `clip_eps` argument in both the clamp and the binding test.
Graded as: ignores_hyperparameter.
"""
EXERCISE = "ex2_clipped_loss"
DIAGNOSIS = "ignores_hyperparameter"
DESCRIPTION = "ε is hard-coded to 0.2, so the `clip_eps` argument is ignored"
SEEN_IN = "the unseen2 set (v14), written outside the project from the docstrings alone"


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
    clipped = torch.clamp(ratio, 0.8, 1.2) * adv  # (B, T)
    # Book eq. 5.9: the clip binds when Â > 0 and r ≥ 1+ε, or Â < 0 and r ≤ 1−ε; there
    # min(r·Â, clip(r)·Â) is the clipped term, a constant. Choosing the term explicitly
    # (not torch.minimum) also gives gradient 0 *at* r = 1±ε, where minimum would split a tie.
    binds = ((adv > 0) & (ratio >= 1.2)) | ((adv < 0) & (ratio <= 0.8))
    objective = torch.where(binds, clipped.detach(), unclipped)  # (B, T) = min(r·Â, clip(r)·Â)
    return -masked_mean(objective, mask)
