"""Buggy (x24 of the unseen5 set, written outside the project from the docstrings alone):
The clipped value is clip(V - V_old, -c, c) without V_old added back.

Clause broken: “V_old + clip(V−V_old, −c, c)”
Expected diagnosis (the set's manifest): the clipped value is V_old + clip(V - V_old, -c, c)
Graded as: value_clip_old_values_not_added (landing 9's grader said only wrong_value).
"""
import torch

EXERCISE = "ex3_full_loss"
DIAGNOSIS = "value_clip_old_values_not_added"
DESCRIPTION = "the clipped value is clip(V - V_old, -c, c) without V_old added back"
SEEN_IN = "the unseen5 set (x24), written outside the project from the docstrings alone"


def clipped_value_loss(
    values: torch.Tensor,
    old_values: torch.Tensor,
    returns: torch.Tensor,
    mask: torch.Tensor,
    clip_range_value: float = 0.2,
) -> torch.Tensor:
    """Clipped value loss L^VF (the c₁ term of Book eq. 5.2), no ½ factor.

    L^VF = masked_mean( max( (V − R)², (V_old + clip(V − V_old, −c, c) − R)² ) ),
    the pessimistic max, as in PPO's and TRL's value clipping.

    Args:
        values: Float[batch, resp_len], V_θ(s_t) from the live value head (gradient flows).
        old_values: Float[batch, resp_len], V(s_t) stored at rollout time (a constant).
        returns: Float[batch, resp_len], the targets R_t = Â_t + V_old (a constant).
        mask: [batch, resp_len] bool/int/float, 1 on real tokens.
        clip_range_value: c, the book's ``cliprange_value`` (0.2).

    Returns:
        0-dim tensor, dtype/device of ``values``, differentiable w.r.t. ``values`` only.

    Raises:
        ValueError: if the four tensors do not share one shape.

    Example (token 1: V = 1.5, V_old = 1.0, R = 2 → max(0.25, (1.2 − 2)²) = 0.64;
    token 2: V = V_old = 0, R = 1 → 1; mean = 0.82):
        >>> import torch
        >>> v = torch.tensor([[1.5, 0.0]], dtype=torch.float64)
        >>> v_old = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
        >>> ret = torch.tensor([[2.0, 1.0]], dtype=torch.float64)
        >>> round(clipped_value_loss(v, v_old, ret, torch.tensor([[True, True]])).item(), 6)
        0.82
    """
    ### BEGIN SOLUTION
    # TODO: implement masked_mean(max((V - R)^2, (V_old + clip(V - V_old, -c, c) - R)^2)) with no 1/2 factor (Book eq. 5.2); detach old_values and returns, raise ValueError on mismatched shapes.
    if len({t.shape for t in (values, old_values, returns, mask)}) != 1:
        raise ValueError(
            "values, old_values, returns and mask must share one [batch, resp_len] shape, got "
            f"{[tuple(t.shape) for t in (values, old_values, returns, mask)]}"
        )
    old_values, returns = old_values.detach(), returns.detach()
    values_clipped = torch.clamp(values - old_values, -clip_range_value, clip_range_value)
    loss_unclipped = (values - returns) ** 2  # (B, T)
    loss_clipped = (values_clipped - returns) ** 2  # (B, T)
    return masked_mean(torch.maximum(loss_unclipped, loss_clipped), mask)
