# Exercise stub (ex1_ratio.py): write your code here. Replace each `raise NotImplementedError(...)` with
# your code; keep the names and signatures (the graders call them).
"""Exercise 1 (stop 6): log-probabilities from logits, and the probability ratio.

Book §5.7 (stop 6, "Logits and the two-network mechanics"): during training
only the live policy is re-evaluated, log π_θ(a_t|s_t) = LogSoftmax(z_new)[a_t],
and the ratio against the frozen snapshot is recovered in log space,
r_t(θ) = exp(log π_θ(a_t|s_t) − log π_θold(a_t|s_t))   (Book eqs. 5.18–5.20),
because dividing raw probabilities would underflow or overflow.

Conventions (all exercises): token-level tensors are [batch, resp_len],
right-padded; padding holds finite junk; outputs follow the dtype of the data
(float32 or float64) and its device; inputs are never modified in place.
"""

from __future__ import annotations

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
    # TODO: implement log-softmax over the last (vocab) dim, then gather at `tokens` -> [batch, resp_len] (Book eqs. 5.18-5.19); use torch.log_softmax for stability and raise ValueError on bad shapes or non-integer tokens.
    raise NotImplementedError('ex1_ratio.logprobs_from_logits: implement log-softmax over the last (vocab) dim, then gather at `tokens` -> [batch, resp_len] (Book eqs. 5.18-5.19); use torch.log_softmax for stability and raise ValueError on bad shapes or non-integer tokens.')


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
    # TODO: implement r = exp(logp_new - logp_old) (Book eq. 5.20); never divide exp(logp_new) by exp(logp_old), and raise ValueError if the shapes differ.
    raise NotImplementedError('ex1_ratio.probability_ratio: implement r = exp(logp_new - logp_old) (Book eq. 5.20); never divide exp(logp_new) by exp(logp_old), and raise ValueError if the shapes differ.')
