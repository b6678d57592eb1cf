"""Buggy (v17 of the unseen2 set, written outside the project from the docstrings alone):
Multiplies by 0.5, as TRL does.

Clause broken: “Clipped value loss L^VF (the c₁ term of Book eq. 5.2), no ½ factor.”
Expected diagnosis (the set's manifest): Your value loss is half the expected value. This course follows the book's eq. 5.2 with no ½ factor.
Graded as: value_loss_half_factor.
"""
EXERCISE = "ex3_full_loss"
DIAGNOSIS = "value_loss_half_factor"
DESCRIPTION = "Multiplies by 0.5, as TRL does"
SEEN_IN = "the unseen2 set (v17), written outside the project from the docstrings alone"


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
    old_values, returns = old_values.detach(), returns.detach()
    values_clipped = old_values + torch.clamp(values - old_values, -clip_range_value, clip_range_value)
    loss_unclipped = (values - returns) ** 2  # (B, T)
    loss_clipped = (values_clipped - returns) ** 2  # (B, T)
    return 0.5 * masked_mean(torch.maximum(loss_unclipped, loss_clipped), mask)
