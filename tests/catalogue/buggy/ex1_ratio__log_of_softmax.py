"""Buggy: log(softmax(z)) instead of log_softmax(z).

softmax underflows to exactly 0 for tokens far below the max logit, so the
log becomes −inf (and its gradient nan) for logits of a few hundred; the
contract asks for a log-softmax that is stable for logits of any size.
"""
EXERCISE = "ex1_ratio"
DIAGNOSIS = "log_of_softmax"
DESCRIPTION = "logprobs_from_logits takes torch.log(torch.softmax(logits)): -inf/nan for large logits"
SEEN_IN = "zackchase/mxnet-the-straight-dope#3 (NaN fixed by switching to log_softmax); tracel-ai/burn#315"

import torch


def logprobs_from_logits(logits, tokens):
    probs = torch.softmax(logits, dim=-1)  # [B, T, V]
    logp = torch.log(probs)
    return torch.gather(logp, 2, tokens.unsqueeze(-1)).squeeze(-1)  # [B, T]
