"""Correct variant (c01 of the unseen2 set, written outside the project from the docstrings
alone): Log-probs as z_a − logsumexp(z) via `take_along_dim`, computed in float64 and cast back to the logits' dtype; checks in a different order; ratio via `torch.sub(...).exp()`.
"""
EXERCISE = "ex1_ratio"
DESCRIPTION = "c01: Log-probs as z_a − logsumexp(z) via `take_along_dim`, computed in float64 and cast back to the logits' dtype; checks in a different order; ratio via `torch.sub(...).exp()`"

import torch

__all__ = ["logprobs_from_logits", "probability_ratio"]


def logprobs_from_logits(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """log π(a_t|s_t): log-softmax over the vocabulary, gathered at the taken tokens (Book eqs. 5.18–5.19).

    Must be numerically stable for logits of any size (e.g. 1e4): never form
    softmax probabilities and then take their log.

    Args:
        logits: Float[batch, resp_len, vocab], float32 or float64. ``logits[:, t]``
            are the logits that produced ``tokens[:, t]`` (already aligned: do not shift).
        tokens: Long[batch, resp_len], token ids in [0, vocab). At padding they
            are still valid ids (the pad id), so no special case is needed.

    Returns:
        Float[batch, resp_len] in the dtype and on the device of ``logits``,
        differentiable w.r.t. ``logits``. Padding positions hold the log-prob of
        whatever id sits there (unspecified: callers mask them).

    Raises:
        ValueError: if ``logits`` is not 3-D, ``tokens`` is not an integer tensor,
            or ``tokens.shape != logits.shape[:2]``.

    Example (vocab of 2, p = softmax(0, log 3) = (1/4, 3/4)):
        >>> import math, torch
        >>> logits = torch.tensor([[[0.0, math.log(3.0)], [5.0, 5.0]]], dtype=torch.float64)
        >>> logprobs_from_logits(logits, torch.tensor([[1, 0]])).exp()
        tensor([[0.7500, 0.5000]], dtype=torch.float64)
    """
    if logits.ndim != 3:
        raise ValueError("logits must be 3-D [batch, resp_len, vocab]")
    if torch.is_floating_point(tokens) or torch.is_complex(tokens) or tokens.dtype is torch.bool:
        raise ValueError("tokens must be an integer tensor")
    if tuple(tokens.shape) != tuple(logits.shape[:2]):
        raise ValueError("tokens.shape must equal logits.shape[:2]")
    idx = tokens.to(device=logits.device, dtype=torch.int64)[..., None]
    z = logits.to(torch.float64)                                    # float64 inside, cast back at the end
    picked = torch.take_along_dim(z, idx, dim=-1)[..., 0]           # z_a
    return (picked - torch.logsumexp(z, dim=-1)).to(logits.dtype)   # z_a − log Σ exp z


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
    if tuple(logp_new.shape) != tuple(logp_old.shape):
        raise ValueError("logp_new and logp_old must have the same shape")
    return torch.sub(logp_new, logp_old).exp()
