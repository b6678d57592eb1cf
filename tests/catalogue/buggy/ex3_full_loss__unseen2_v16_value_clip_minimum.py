"""Buggy (v16 of the unseen2 set, written outside the project from the docstrings alone):
`torch.minimum` of the two squared errors.

Clause broken: “L^VF = masked_mean( max( (V − R)², (V_old + clip(V − V_old, −c, c) − R)² ) ), the pessimistic max”
Expected diagnosis (the set's manifest): The value loss takes the optimistic min. PPO's value clipping uses the max (pessimistic) of the clipped and unclipped errors.
Graded as: value_loss_min_instead_of_max.
"""
EXERCISE = "ex3_full_loss"
DIAGNOSIS = "value_loss_min_instead_of_max"
DESCRIPTION = "`torch.minimum` of the two squared errors"
SEEN_IN = "the unseen2 set (v16), written outside the project from the docstrings alone"


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
    return masked_mean(torch.minimum(loss_unclipped, loss_clipped), mask)
