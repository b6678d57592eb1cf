"""Buggy: computes in float32 and returns float32 whatever the input dtype.

`.float()` is a habit from mixed-precision code; the contract says the output
dtype follows the data (float64 logits must give float64 log-probs).
"""
EXERCISE = "ex1_ratio"
DIAGNOSIS = "wrong_dtype"
DESCRIPTION = "logprobs_from_logits calls logits.float(): float64 inputs come back as float32"
SEEN_IN = "classroom mistake (upcast habit from bf16 training code)"

import torch
import torch.nn.functional as F


def logprobs_from_logits(logits, tokens):
    logp = F.log_softmax(logits.float(), dim=-1)
    return logp.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
