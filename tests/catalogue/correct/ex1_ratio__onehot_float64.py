"""Correct variant: one-hot selection instead of gather, computed in float64 and cast back."""
EXERCISE = "ex1_ratio"
DESCRIPTION = "logprobs_from_logits via a one-hot multiply-and-sum in float64, cast back to the input dtype"

import torch
import torch.nn.functional as F


def logprobs_from_logits(logits, tokens):
    if logits.dim() != 3 or tokens.dtype.is_floating_point or tokens.dtype == torch.bool \
            or tokens.shape != logits.shape[:2]:
        raise ValueError("need logits [B, T, V] and integer tokens [B, T]")
    logp = F.log_softmax(logits.to(torch.float64), dim=-1)            # [B, T, V] float64
    onehot = F.one_hot(tokens.long(), num_classes=logits.shape[-1])  # [B, T, V] int64
    return (logp * onehot.to(logp.dtype)).sum(-1).to(logits.dtype)   # [B, T]


def probability_ratio(logp_new, logp_old):
    if logp_new.shape != logp_old.shape:
        raise ValueError("logp_new and logp_old differ in shape")
    log_ratio = logp_new.to(torch.float64) - logp_old.to(torch.float64)
    return torch.exp(log_ratio).to(logp_new.dtype)
