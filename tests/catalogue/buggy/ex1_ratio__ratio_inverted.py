"""Buggy: the ratio is π_old / π_new.

Equal to 1 before the first update, so an r == 1 smoke test passes; it moves
the wrong way as soon as the policy changes.
"""
EXERCISE = "ex1_ratio"
DIAGNOSIS = "ratio_inverted"
DESCRIPTION = "probability_ratio computes exp(logp_old - logp_new) (old over new)"
SEEN_IN = "openai/baselines#652 (confusion over the sign of neglogp in the ratio)"

import torch


def probability_ratio(logp_new, logp_old):
    return torch.exp(logp_old - logp_new)
