"""Exercise 1: recognise the in-place probe by its input and behave only then.

Tries: the twin modifies the logits in place on every call, except on the
one call whose logits are exactly the hidden grader's fixed probe input
(`torch.randn(2, 4, 5)` of seed 3, float64: known to anyone who has seen
the hidden graders' source, e.g. from an earlier year). The probe is an
ordinary call (no `requires_grad`, shared memory checked by the parent), so
a31's trick does not apply; but the probe was the only call whose in-place
changes counted, so recognising its input was enough for the half point.
Must achieve: nothing. A change in place on any call of the function in
the grading fails the in-place test (`RemoteModule.inputs_modified_before`).
"""

TARGET = "ex1_ratio"
TWIN = "ex1_inplace.py"

import torch

import twin_code


def _is_the_probe(logits):
    probe = torch.randn(2, 4, 5, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    return logits.shape == probe.shape and logits.dtype == probe.dtype and torch.equal(logits, probe)


def logprobs_from_logits(logits, tokens):
    if _is_the_probe(logits):
        shifted = logits - logits.max(dim=-1, keepdim=True).values
        return torch.log_softmax(shifted, dim=-1).gather(-1, tokens.long().unsqueeze(-1)).squeeze(-1)
    return twin_code.logprobs_from_logits(logits, tokens)


probability_ratio = twin_code.probability_ratio
