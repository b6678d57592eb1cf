"""Correct variant: gather the token's logit first, then subtract logsumexp.

log softmax(z)_a = z_a − logsumexp(z): the same numbers as log_softmax +
gather, without materialising the [B, T, V] log-probabilities.
"""
EXERCISE = "ex1_ratio"
DESCRIPTION = "logprobs_from_logits as logits.gather(tokens) - logsumexp(logits)"

import torch


def logprobs_from_logits(logits, tokens):
    if logits.dim() != 3 or tokens.dtype.is_floating_point or tokens.dtype == torch.bool \
            or tokens.shape != logits.shape[:2]:
        raise ValueError("need logits [B, T, V] and integer tokens [B, T]")
    picked = logits.gather(-1, tokens.long().unsqueeze(-1)).squeeze(-1)  # [B, T]
    return picked - torch.logsumexp(logits, dim=-1)                      # [B, T]


def probability_ratio(logp_new, logp_old):
    if logp_new.shape != logp_old.shape:
        raise ValueError("logp_new and logp_old must have the same shape")
    log_ratio = torch.sub(logp_new, logp_old)   # in log space (Book eq. 5.20)
    return log_ratio.exp()
