"""Buggy (u18 of the landing-7 unseen set, written outside the project from the docstrings alone):
torch.minimum of the clipped and unclipped squared errors.

Clause broken: "the pessimistic max, as in PPO's and TRL's value clipping"
Expected diagnosis (the set's manifest): An optimistic min instead of the max: the value clip lets the critic move further instead of limiting it.
"""
EXERCISE = "ex3_full_loss"
DIAGNOSIS = "value_loss_min_instead_of_max"
DESCRIPTION = "torch.minimum of the clipped and unclipped squared errors"
SEEN_IN = "the landing-7 unseen set (u18), written outside the project from the docstrings alone"


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
