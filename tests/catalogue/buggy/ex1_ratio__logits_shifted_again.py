"""Buggy: shifts logits by one position although they are already aligned.

The contract says logits[:, t] produced tokens[:, t]. A student who remembers
the causal-LM "shift by one" applies it again, scores token t with the logits
of step t−1, and fills the first column with the first step's own score.
"""
EXERCISE = "ex1_ratio"
DIAGNOSIS = "logprobs_misaligned"
DESCRIPTION = "logprobs_from_logits shifts logits by one step (off-by-one alignment with the tokens)"
SEEN_IN = "lucidrains/PaLM-rlhf-pytorch#31 (action logits shifted wrongly); AI-Hypercomputer/maxtext#2103"

import torch
import torch.nn.functional as F


def logprobs_from_logits(logits, tokens):
    logp = F.log_softmax(logits, dim=-1)                      # [B, T, V]
    # logits at step t-1 predict token t (causal LM), so shift before gathering
    shifted = torch.cat([logp[:, :1], logp[:, :-1]], dim=1)   # [B, T, V]
    return shifted.gather(2, tokens.unsqueeze(-1)).squeeze(-1)
