"""Honest twin for exercise 1: a plausible but numerically unstable implementation.

The mistake (a common one, Book eq. 5.20 warns against it): log-probs are the
log of softmax probabilities (−inf once a probability underflows) and the
ratio divides raw probabilities (0/0 = NaN when both log-probs are −1000).
It passes the tests on moderate inputs and fails the stability tests, so a
hostile submission built on it has something to gain, and must gain nothing.
"""

import torch


def logprobs_from_logits(logits, tokens):
    probs = torch.softmax(logits, dim=-1)  # (B, T, V); underflows to 0 for huge logits
    return torch.log(probs).gather(-1, tokens.long().unsqueeze(-1)).squeeze(-1)  # (B, T)


def probability_ratio(logp_new, logp_old):
    return torch.exp(logp_new) / torch.exp(logp_old)  # 0/0 at −1000
