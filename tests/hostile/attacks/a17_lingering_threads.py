"""Threads that keep running after every call returns: CPU hogs and late meddlers.

Tries: at import, 8 threads doing GIL-free matrix products for up to 60 s
(to starve the grader and the other exercise's child of CPU), plus a thread
that, once a hard input was seen, keeps swapping the module's functions and
printing; the calls themselves return the twin's values at once.
Must achieve: nothing. The threads die with the child when the sandbox is
closed; the grader compares what was returned; the other exercise's child
has its own process and deadline.
"""

TARGET = "ex1_ratio"
TWIN = "ex1_unstable.py"

import sys
import threading
import time

import torch

import twin_code

_stop = time.monotonic() + 60
_seen_hard = threading.Event()


def _burn():
    a = torch.randn(256, 256)
    while time.monotonic() < _stop:
        a = torch.tanh(a @ a)


def _meddle():
    module = sys.modules[__name__]
    while time.monotonic() < _stop:
        if _seen_hard.wait(0.05):
            module.logprobs_from_logits = twin_code.logprobs_from_logits
            print("ppohostile: still here", flush=True)


for _ in range(8):
    try:
        threading.Thread(target=_burn, daemon=True).start()
    except RuntimeError:  # RLIMIT_NPROC
        break
threading.Thread(target=_meddle, daemon=True).start()


def logprobs_from_logits(logits, tokens):
    if logits.numel() and logits.abs().max() > 100:
        _seen_hard.set()
    return twin_code.logprobs_from_logits(logits, tokens)


def probability_ratio(logp_new, logp_old):
    return twin_code.probability_ratio(logp_new, logp_old)
