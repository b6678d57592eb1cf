"""Buggy: log_softmax normalised over the time axis (dim=1) instead of the vocabulary.

The shapes still work out ([B, T, V] in, [B, T] out), so nothing crashes; the
numbers are log-probabilities of "which step", not of "which token".
"""
EXERCISE = "ex1_ratio"
DIAGNOSIS = "softmax_wrong_dim"
DESCRIPTION = "logprobs_from_logits normalises with log_softmax(dim=1) (over T, not over the vocabulary)"
SEEN_IN = "classroom mistake (dim=1 is the class axis for [N, C] logits, not for [B, T, V])"

import torch
import torch.nn.functional as F


def logprobs_from_logits(logits, tokens):
    logp = F.log_softmax(logits, dim=1)
    return torch.gather(logp, 2, tokens.unsqueeze(2)).squeeze(2)
