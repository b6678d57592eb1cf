"""Buggy (v24 of the unseen2 set, written outside the project from the docstrings alone):
`returns` is not detached in the value loss.

Clause broken: “returns: Float[batch, resp_len], the targets R_t = Â_t + V_old (a constant). ... differentiable w.r.t. ``values`` only.”
Expected diagnosis (the set's manifest): Gradient flows into the return targets. Treat them as constants and detach them.
Graded as: gradient_into_constants.
"""
EXERCISE = "ex3_full_loss"
DIAGNOSIS = "gradient_into_constants"
DESCRIPTION = "`returns` is not detached in the value loss"
SEEN_IN = "the unseen2 set (v24), written outside the project from the docstrings alone"


def clipped_value_loss(
    values: torch.Tensor,
    old_values: torch.Tensor,
    returns: torch.Tensor,
    mask: torch.Tensor,
    clip_range_value: float = 0.2,
) -> torch.Tensor:
    if len({t.shape for t in (values, old_values, returns, mask)}) != 1:
        raise ValueError(
            "values, old_values, returns and mask must share one [batch, resp_len] shape, got "
            f"{[tuple(t.shape) for t in (values, old_values, returns, mask)]}"
        )
    old_values = old_values.detach()
    values_clipped = old_values + torch.clamp(values - old_values, -clip_range_value, clip_range_value)
    loss_unclipped = (values - returns) ** 2  # (B, T)
    loss_clipped = (values_clipped - returns) ** 2  # (B, T)
    return masked_mean(torch.maximum(loss_unclipped, loss_clipped), mask)
