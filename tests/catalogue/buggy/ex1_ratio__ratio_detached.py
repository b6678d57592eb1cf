"""Buggy: the ratio is detached, so the policy gradient through r vanishes.

The values are right (r == 1 at the first step, as expected), which is why
this one survives a forward-only check: only a gradient test catches it.
"""
EXERCISE = "ex1_ratio"
DIAGNOSIS = "ratio_detached"
DESCRIPTION = "probability_ratio returns a detached tensor: no gradient reaches logp_new"
SEEN_IN = "classroom mistake (ratio built under torch.no_grad); cf. inclusionAI/AReno#68 on ratios whose gradient path is cut"

import torch


def probability_ratio(logp_new, logp_old):
    with torch.no_grad():  # "the ratio is just a weight"
        log_ratio = logp_new - logp_old
    return torch.exp(log_ratio)
