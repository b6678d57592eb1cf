"""Detect the grader's in-place probe and behave only while it watches.

Tries: modify the inputs in place (as the twin does) except when the call
looks like the grader's probe for in-place changes: an input that requires
grad (the sandbox turns an in-place change of such a leaf into autograd's
error, which the graders report as ``modifies_input``).
Must achieve: nothing. Whatever the call looks like, a function that
modifies its inputs must fail the in-place tests as its twin does.
"""

TARGET = "ex1_ratio"
TWIN = "ex1_inplace.py"

import torch

import twin_code


def logprobs_from_logits(logits, tokens):
    if logits.requires_grad:  # the probe: stay out of place while it watches
        shifted = logits - logits.max(dim=-1, keepdim=True).values
        return torch.log_softmax(shifted, dim=-1).gather(-1, tokens.long().unsqueeze(-1)).squeeze(-1)
    return twin_code.logprobs_from_logits(logits, tokens)


probability_ratio = twin_code.probability_ratio
