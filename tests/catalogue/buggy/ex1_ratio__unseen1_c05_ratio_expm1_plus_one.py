"""Buggy (c05 of the landing-7 unseen set, sent as a correct implementation): probability_ratio as
expm1(logp_new − logp_old) + 1. Adding 1 to expm1 cancels: for a log-ratio below about −17 (float32) or
−37 (float64) the ratio comes out exactly 0 instead of e^Δ, so r(a, b)·r(b, a) = 1 fails and the finite-ratio
clause at log-probs of −1000 with log-ratios of ±k (k in 21..29) is broken. Graded as a mistake by decision
(8.5/10): only the generic wrong_value names it. Its logprobs_from_logits (gather − logsumexp) is correct and
left out here.
"""
EXERCISE = "ex1_ratio"
DIAGNOSIS = "wrong_value"
DESCRIPTION = "probability_ratio as torch.expm1(logp_new - logp_old) + 1 (cancels to 0 for large negative log-ratios)"
SEEN_IN = "the landing-7 unseen set (c05), written outside the project from the docstrings alone"

import torch


def probability_ratio(logp_new: torch.Tensor, logp_old: torch.Tensor) -> torch.Tensor:
    if logp_new.shape != logp_old.shape:
        raise ValueError(f"shapes differ: {tuple(logp_new.shape)} vs {tuple(logp_old.shape)}")
    return torch.expm1(logp_new - logp_old) + 1.0
