"""Buggy (u25 of the landing-7 unseen set, written outside the project from the docstrings alone):
detach of old_values/returns removed.

Clause broken: "old_values ... (a constant)"; "returns ... (a constant)"; "differentiable w.r.t. values only"
Expected diagnosis (the set's manifest): Gradient leaks into the value targets and the old values. Treat them as constants.
"""
EXERCISE = "ex3_full_loss"
DIAGNOSIS = "gradient_into_constants"
DESCRIPTION = "detach of old_values/returns removed"
SEEN_IN = "the landing-7 unseen set (u25), written outside the project from the docstrings alone"


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
    values_clipped = old_values + torch.clamp(values - old_values, -clip_range_value, clip_range_value)
    loss_unclipped = (values - returns) ** 2  # (B, T)
    loss_clipped = (values_clipped - returns) ** 2  # (B, T)
    return masked_mean(torch.maximum(loss_unclipped, loss_clipped), mask)
