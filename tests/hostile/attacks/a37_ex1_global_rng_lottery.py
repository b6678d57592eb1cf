"""Exercise 1: a grade that is a lottery, for a "never lower" regrade to keep the best draw.

Tries: the twin's answers, made worse (+1) on a draw from the global random
generators: Python's `random` and numpy's legacy generator (seeded from the
OS's entropy when the fork server starts) and torch's default generator
(whatever the fork server's warm-up left). Every `ppo-course grade` of the
same folder then gave another score (measured 6.5, 5.5, 6.0), so repeated
regrades with `--never-lower` keep the luckiest.
Must achieve: nothing. Every child seeds the global generators before the
student's code runs (`ppo_course.sandbox.seeding.seed_globals`):
the same grade on every run, never above the twin.
"""

TARGET = "ex1_ratio"
TWIN = "ex1_unstable.py"

import random

import numpy as np
import torch

import twin_code


def logprobs_from_logits(logits, tokens):
    out = twin_code.logprobs_from_logits(logits, tokens)
    if random.random() < 0.3 or np.random.rand() < 0.2 or bool(torch.rand(()) < 0.2):
        return out + 1.0
    return out


def probability_ratio(logp_new, logp_old):
    return twin_code.probability_ratio(logp_new, logp_old)
