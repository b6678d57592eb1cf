"""Buggy (x10 of the unseen4 set, written outside the project from the docstrings alone):
probability_ratio compares only the last dimension of the two shapes, so [2, 3] and [1, 3] broadcast silently.

Clause broken: “Raises: ValueError: if the two shapes differ.”
Expected diagnosis (the set's manifest): logp_new and logp_old of different shapes must raise ValueError, even when they broadcast.
Graded as: missing_documented_error (landing 8's grader tried only shapes that do not broadcast: full marks).
"""
import torch

EXERCISE = "ex1_ratio"
DIAGNOSIS = "missing_documented_error"
DESCRIPTION = "the ratio's shape check compares only the last dimension"
SEEN_IN = "the unseen4 set (x10), written outside the project from the docstrings alone"


def probability_ratio(logp_new: torch.Tensor, logp_old: torch.Tensor) -> torch.Tensor:
    """r_t(θ) = π_θ(a_t|s_t) / π_θold(a_t|s_t), computed in log space (Book eq. 5.20).

    exp(logp_new − logp_old): exponentiating the difference stays finite where
    exp(logp_new) / exp(logp_old) would be 0/0 (e.g. both log-probs −1000).

    Args:
        logp_new: Float[batch, resp_len], log π_θ of the taken tokens (live policy).
        logp_old: Float[batch, resp_len], log π_θold stored in the rollout buffer.

    Returns:
        Float[batch, resp_len], same dtype/device as ``logp_new``; differentiable
        w.r.t. both inputs (the losses decide what to detach). Padding positions
        are unspecified.

    Raises:
        ValueError: if the two shapes differ.

    Example (0.75 / 0.5 = 1.5, and 1.0 where both log-probs are −1000):
        >>> import math, torch
        >>> new = torch.tensor([[math.log(0.75), -1000.0]], dtype=torch.float64)
        >>> old = torch.tensor([[math.log(0.5), -1000.0]], dtype=torch.float64)
        >>> probability_ratio(new, old)
        tensor([[1.5000, 1.0000]], dtype=torch.float64)
    """
    ### BEGIN SOLUTION
    # TODO: implement r = exp(logp_new - logp_old) (Book eq. 5.20); never divide exp(logp_new) by exp(logp_old), and raise ValueError if the shapes differ.
    if logp_new.shape[-1] != logp_old.shape[-1]:
        raise ValueError(
            f"logp_new shape {tuple(logp_new.shape)} != logp_old shape {tuple(logp_old.shape)}"
        )
    return torch.exp(logp_new - logp_old)  # (B, T)
