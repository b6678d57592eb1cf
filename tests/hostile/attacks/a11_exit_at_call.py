"""Exit with status 0 inside the call, exactly on the inputs where the twin is wrong.

Tries: sys.exit(0) on huge logits and os._exit(0) on log-probs around −1000,
hoping a test that ends without a failure counts as passed; also raises
SystemExit from a finally block and KeyboardInterrupt (to stop pytest).
Must achieve: nothing (each is a failed call: an error or a crash).
"""

TARGET = "ex1_ratio"
TWIN = "ex1_unstable.py"

import os
import sys

import twin_code


def logprobs_from_logits(logits, tokens):
    if logits.numel() and logits.abs().max() > 100:
        try:
            raise KeyboardInterrupt
        finally:
            sys.exit(0)
    return twin_code.logprobs_from_logits(logits, tokens)


def probability_ratio(logp_new, logp_old):
    if logp_old.numel() and logp_old.min() < -500:
        os._exit(0)
    return twin_code.probability_ratio(logp_new, logp_old)
