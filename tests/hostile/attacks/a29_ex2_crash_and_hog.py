"""Exercise 2: crash on the hard inputs, and hog the CPU from the start.

Tries: 6 threads of GIL-free matrix products started at import (up to 60 s),
os._exit(0) on batches with padding (where the twin is wrong) and an
abort() (SIGABRT) on batches whose advantages are all negative.
Must achieve: nothing (failed calls; the other exercise keeps its score).
"""

TARGET = "ex2_clipped_loss"
TWIN = "ex2_unmasked.py"

import os
import threading
import time

import torch

import twin_code

_stop = time.monotonic() + 60


def _burn():
    a = torch.randn(256, 256)
    while time.monotonic() < _stop:
        a = torch.tanh(a @ a)


for _ in range(6):
    try:
        threading.Thread(target=_burn, daemon=True).start()
    except RuntimeError:
        break


def clipped_surrogate_loss(logp_new, logp_old, advantages, mask, clip_eps=0.2):
    if bool((mask == 0).any()):
        os._exit(0)
    if advantages.numel() and bool((advantages < 0).all()):
        os.abort()
    return twin_code.clipped_surrogate_loss(logp_new, logp_old, advantages, mask, clip_eps)
