"""Buggy: the ratio divides probabilities instead of exponentiating a log-prob difference.

exp(logp_new) / exp(logp_old) is the same number in exact arithmetic, but both
factors underflow to 0 when the log-probs are very negative (−1000 → 0/0 = nan),
which is exactly what Book eq. 5.20 tells us to avoid.
"""
EXERCISE = "ex1_ratio"
DIAGNOSIS = "ratio_in_probability_space"
DESCRIPTION = "probability_ratio computes exp(logp_new) / exp(logp_old): nan when both log-probs are -1000"
SEEN_IN = "Book §5.7 (eq. 5.20) warns against it; classroom mistake"

import torch


def probability_ratio(logp_new, logp_old):
    # pi_new / pi_old, straight from the definition of the ratio
    return torch.exp(logp_new) / torch.exp(logp_old)
