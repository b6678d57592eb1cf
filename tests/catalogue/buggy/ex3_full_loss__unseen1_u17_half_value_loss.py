"""Buggy (u17 of the landing-7 unseen set, written outside the project from the docstrings alone):
multiplies the value loss by 0.5.

Clause broken: "Clipped value loss L^VF ... no ½ factor"
Expected diagnosis (the set's manifest): The value loss (and its gradient) is half the specified value. Drop the ½, as the book writes eq. 5.2.
"""
EXERCISE = "ex3_full_loss"
DIAGNOSIS = "value_loss_half_factor"
DESCRIPTION = "multiplies the value loss by 0.5"
SEEN_IN = "the landing-7 unseen set (u17), written outside the project from the docstrings alone"


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
