"""Buggy: probability_ratio detaches logp_old ("the old policy is a constant"), but its docstring promises a
ratio differentiable w.r.t. both inputs (d r / d logp_old = -r; the losses decide what to detach, Book eq. 5.20).
"""
EXERCISE = "ex1_ratio"
DIAGNOSIS = "ratio_detached"
DESCRIPTION = "probability_ratio detaches logp_old inside: no gradient w.r.t. the second input"
SEEN_IN = "classroom mistake (detaching the snapshot's log-probs one function too early)"

import torch


def probability_ratio(logp_new, logp_old):
    if logp_new.shape != logp_old.shape:
        raise ValueError(f"shapes differ: {tuple(logp_new.shape)} vs {tuple(logp_old.shape)}")
    return torch.exp(logp_new - logp_old.detach())
