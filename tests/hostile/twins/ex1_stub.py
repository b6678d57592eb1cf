"""Honest twin for exercise 1: the student has not started (both functions raise NotImplementedError,
as in the generated stub ``exercises/ex1_ratio.py``). Every test fails: 0 points."""

import torch


def logprobs_from_logits(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    raise NotImplementedError("logprobs_from_logits")


def probability_ratio(logp_new: torch.Tensor, logp_old: torch.Tensor) -> torch.Tensor:
    raise NotImplementedError("probability_ratio")
