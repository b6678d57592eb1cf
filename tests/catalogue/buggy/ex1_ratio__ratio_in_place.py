"""Buggy: probability_ratio reuses logp_new's memory for the log-ratio and the ratio (sub_, exp_), "to save a
[B, T] temporary": the caller's logp_new comes back holding the ratio, while the module's conventions say
inputs are never modified in place (and autograd refuses it on a leaf that requires grad, Book eq. 5.20).
"""
EXERCISE = "ex1_ratio"
DIAGNOSIS = "modifies_input"
DESCRIPTION = "probability_ratio computes logp_new.sub_(logp_old).exp_(): the caller's logp_new is overwritten"
SEEN_IN = "classroom mistake (in-place ops to save memory on [B, T] tensors)"

import torch


def probability_ratio(logp_new, logp_old):
    if logp_new.shape != logp_old.shape:
        raise ValueError(f"shapes differ: {tuple(logp_new.shape)} vs {tuple(logp_old.shape)}")
    return logp_new.sub_(logp_old).exp_()
