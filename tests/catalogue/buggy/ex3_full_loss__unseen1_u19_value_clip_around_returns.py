"""Buggy (u19 of the landing-7 unseen set, written outside the project from the docstrings alone):
clips around the returns: R + clip(V − R, −c, c).

Clause broken: "(V_old + clip(V − V_old, −c, c) − R)²"
Expected diagnosis (the set's manifest): The value clip is centred on the target instead of on the rollout-time value V_old.
"""
EXERCISE = "ex3_full_loss"
DIAGNOSIS = "value_clip_around_returns"
DESCRIPTION = "clips around the returns: R + clip(V − R, −c, c)"
SEEN_IN = "the landing-7 unseen set (u19), written outside the project from the docstrings alone"


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
    values_clipped = returns + torch.clamp(values - returns, -clip_range_value, clip_range_value)
    loss_unclipped = (values - returns) ** 2  # (B, T)
    loss_clipped = (values_clipped - returns) ** 2  # (B, T)
    return masked_mean(torch.maximum(loss_unclipped, loss_clipped), mask)
