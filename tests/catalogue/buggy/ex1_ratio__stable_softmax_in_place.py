"""Buggy: a hand-rolled stable log-softmax that subtracts the max *in place*.

The numbers are right, but the caller's logits tensor is modified (the
contract: functions must not modify their inputs in place), and with
requires_grad logits autograd refuses the in-place op on a leaf.
"""
EXERCISE = "ex1_ratio"
DIAGNOSIS = "modifies_input"
DESCRIPTION = "logprobs_from_logits subtracts the row max from the caller's logits in place"
SEEN_IN = "classroom mistake (the max-subtraction trick written with sub_)"

import torch


def logprobs_from_logits(logits, tokens):
    # subtract the max for stability; in place to "avoid copying a [B, T, V] tensor"
    logits -= logits.max(dim=-1, keepdim=True).values
    logp = logits - torch.logsumexp(logits, dim=-1, keepdim=True)
    return logp.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
