"""Buggy (x07 of the unseen7 set, written outside the project from the docstrings alone):
Logprobs_from_logits returns F.cross_entropy(..., reduction='none'), the negative log-likelihood.

Clause broken: “Returns log π(token) (log_softmax gathered at the tokens)”
Expected diagnosis (the set's manifest): cross_entropy is −log π: the sign is flipped
Graded as: logprobs_negated (landing 11's grader said only wrong_value).
"""
import torch

EXERCISE = "ex1_ratio"
DIAGNOSIS = "logprobs_negated"
DESCRIPTION = "logprobs_from_logits returns F.cross_entropy(..., reduction='none'), the negative log-likelihood"
SEEN_IN = "the unseen7 set (x07), written outside the project from the docstrings alone"


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
    ### BEGIN SOLUTION
    # TODO: implement log-softmax over the last (vocab) dim, then gather at `tokens` -> [batch, resp_len] (Book eqs. 5.18-5.19); use torch.log_softmax for stability and raise ValueError on bad shapes or non-integer tokens.
    if logits.dim() != 3:
        raise ValueError(f"logits must be [batch, resp_len, vocab], got shape {tuple(logits.shape)}")
    if tokens.dtype.is_floating_point or tokens.dtype == torch.bool:
        raise ValueError(f"tokens must be an integer (long) tensor, got {tokens.dtype}")
    if tokens.shape != logits.shape[:2]:
        raise ValueError(
            f"tokens shape {tuple(tokens.shape)} must equal logits.shape[:2] = {tuple(logits.shape[:2])}"
        )
    # log_softmax subtracts the max internally (log-sum-exp), so huge logits stay finite.
    return torch.nn.functional.cross_entropy(logits.transpose(1, 2), tokens.long(), reduction="none")  # (B, T)
