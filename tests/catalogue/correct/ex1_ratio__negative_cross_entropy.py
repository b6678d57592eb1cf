"""Correct variant: log π(a_t) as the negative per-token cross-entropy (F.cross_entropy, reduction="none")."""
EXERCISE = "ex1_ratio"
DESCRIPTION = "logprobs_from_logits as -F.cross_entropy(logits.transpose(1, 2), tokens, reduction='none')"

import torch
import torch.nn.functional as F


def logprobs_from_logits(logits, tokens):
    if logits.dim() != 3 or tokens.dtype.is_floating_point or tokens.dtype == torch.bool \
            or tokens.shape != logits.shape[:2]:
        raise ValueError("need logits [B, T, V] and integer tokens [B, T]")
    # cross_entropy wants the classes on dim 1: [B, V, T]
    return -F.cross_entropy(logits.transpose(1, 2), tokens.long(), reduction="none")   # [B, T]
