"""Stop 6: log-probabilities from logits and the probability ratio in log space (Book §5.7, eqs. 5.18–5.20)."""

from __future__ import annotations

import torch

from ppo_reference.masked import check_floating, check_same_shape

__all__ = ["logprobs_from_logits", "probability_ratio"]


def logprobs_from_logits(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """log π(a_t | s_t): the log-softmax of the logits gathered at the taken tokens (Book eqs. 5.18–5.19).

    Computed as ``z[a] − logsumexp(z)``, which is stable for logits of any
    size (the max is subtracted inside ``logsumexp``) and never materialises
    the full ``[batch, resp_len, vocab]`` log-softmax (TRL 0.11 does
    ``log_softmax`` then ``gather``; the values agree to rounding).

    Args:
        logits: [batch, resp_len, vocab] float; ``logits[:, t]`` are the logits
            that produced ``tokens[:, t]`` (already aligned, already divided by
            any sampling temperature).
        tokens: [batch, resp_len] integer token ids in [0, vocab); padding
            positions hold valid ids too.

    Returns:
        [batch, resp_len] in the dtype and device of ``logits``, ≤ 0,
        differentiable in ``logits``. Every position is computed; padding
        positions are meaningless and left to the caller's mask.

    Raises:
        TypeError: if ``logits`` is not floating or ``tokens`` not integer.
        ValueError: if ``logits`` is not 3-D, the leading shapes differ, the
            devices differ, or a token id is outside [0, vocab).
    """
    where = "logprobs_from_logits"
    if not isinstance(logits, torch.Tensor) or not isinstance(tokens, torch.Tensor):
        raise TypeError(f"{where}: `logits` and `tokens` must be torch.Tensors")
    check_floating(where, logits=logits)
    if logits.dim() != 3:
        raise ValueError(f"{where}: `logits` must be [batch, resp_len, vocab], got shape {tuple(logits.shape)}")
    if tokens.dtype.is_floating_point or tokens.dtype.is_complex or tokens.dtype == torch.bool:
        raise TypeError(f"{where}: `tokens` must hold integer ids (torch.long), got dtype {tokens.dtype}")
    if tokens.shape != logits.shape[:2]:
        raise ValueError(
            f"{where}: `tokens` has shape {tuple(tokens.shape)} but `logits` is {tuple(logits.shape)}; "
            "tokens must be [batch, resp_len] matching logits[:, :, 0]"
        )
    if tokens.device != logits.device:
        raise ValueError(f"{where}: `tokens` is on {tokens.device} but `logits` on {logits.device}")
    vocab = logits.shape[-1]
    # On CUDA an out-of-range gather is a device-side assert that kills the
    # context; check first (one sync) and say which id was wrong.
    out_of_range = (tokens < 0) | (tokens >= vocab)
    if bool(out_of_range.any()):
        bad = tokens[out_of_range].flatten()[0].item()
        raise ValueError(f"{where}: token id {bad} is outside the vocabulary [0, {vocab})")
    index = tokens.long().unsqueeze(-1)  # (B, T, 1)
    picked = torch.gather(logits, -1, index).squeeze(-1)  # (B, T)
    return picked - torch.logsumexp(logits, dim=-1)  # (B, T)


def probability_ratio(logp_new: torch.Tensor, logp_old: torch.Tensor) -> torch.Tensor:
    """r_t(θ) = π_θ(a_t|s_t) / π_θold(a_t|s_t), computed as exp(log π_θ − log π_θold) (Book eq. 5.20).

    Exponentiating the difference of log-probabilities never forms the raw
    probabilities, which underflow for long-tail tokens: with both log-probs
    at −1000 the ratio is exactly 1, where exp(−1000)/exp(−1000) is 0/0.

    Args:
        logp_new: [batch, resp_len] float, log-probs under the live policy π_θ.
        logp_old: [batch, resp_len] float, log-probs stored at rollout by π_θold.

    Returns:
        [batch, resp_len], dtype and device of ``logp_new``. The plain function
        is differentiable in both arguments; the losses (``clipped_surrogate_loss``,
        ``ppo_loss``) detach ``logp_old`` themselves, since π_θold is a frozen
        snapshot. Padding positions are unspecified.

    Raises:
        TypeError: if an argument is not a floating tensor.
        ValueError: if the shapes differ.
    """
    check_same_shape("probability_ratio", logp_new=logp_new, logp_old=logp_old)
    check_floating("probability_ratio", logp_new=logp_new, logp_old=logp_old)
    return torch.exp(logp_new - logp_old.to(logp_new.dtype))
