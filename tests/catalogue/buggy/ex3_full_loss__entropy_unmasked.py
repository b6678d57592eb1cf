"""Buggy: the entropy bonus averages over every position, padding included."""
EXERCISE = "ex3_full_loss"
DIAGNOSIS = "entropy_unmasked"
DESCRIPTION = "entropy_from_logits ignores the mask: mean entropy over all positions, padding included"
SEEN_IN = "huggingface/trl#6803 (objective/entropy includes padding tokens)"

import torch
import torch.nn.functional as F


def entropy_from_logits(logits, mask):
    logp = F.log_softmax(logits, dim=-1)
    ent = -(logp.exp() * logp).sum(-1)  # [B, T]
    return ent.mean()
