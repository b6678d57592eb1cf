"""Allocate (and touch) memory until something breaks: the child, the grader or the machine.

Tries: a 100 GB tensor at import (caught), then on the inputs where the
twin is wrong, 256 MiB chunks filled with data, up to 6 GiB, keeping
whatever it got and retrying after each MemoryError.
Must achieve: nothing. RLIMIT_AS stops the child at its budget: the call
fails or the child dies; the grader and the other exercise are unaffected.
"""

TARGET = "ex1_ratio"
TWIN = "ex1_unstable.py"

import torch

import twin_code

_hoard = []
try:
    _hoard.append(torch.empty(100 * 2**30, dtype=torch.uint8))
except BaseException:  # noqa: BLE001
    pass


def _hog():
    for _ in range(24):  # 24 x 256 MiB = 6 GiB at most
        try:
            _hoard.append(torch.ones(256 * 2**20, dtype=torch.uint8))
        except BaseException:  # noqa: BLE001 - keep what we have, try again
            continue
    # Whatever was obtained is kept alive by _hoard.


def logprobs_from_logits(logits, tokens):
    if logits.numel() and logits.abs().max() > 100:
        _hog()
    return twin_code.logprobs_from_logits(logits, tokens)


def probability_ratio(logp_new, logp_old):
    if logp_old.numel() and logp_old.min() < -500:
        _hog()
    return twin_code.probability_ratio(logp_new, logp_old)
