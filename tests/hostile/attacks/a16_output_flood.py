"""Flood stdout and stderr (hoping to fill the grader's memory, disk or logs).

Tries: 1 MiB of output at import, then on the inputs where the twin is wrong
up to 100 MiB on each stream (os.write, bypassing Python's buffering), then
the twin's answer.
Must achieve: nothing. The grader keeps 64 KiB, counts the rest, and stops
the child past 32 MiB (the call fails); the printed text is never parsed.
"""

TARGET = "ex1_ratio"
TWIN = "ex1_unstable.py"

import os
import sys

import twin_code

print("ppohostile " * 100_000)
print("ppohostile " * 100_000, file=sys.stderr)


def _flood():
    chunk = b"ppohostile flood " * 65536  # ~1.1 MB
    for _ in range(90):
        for fd in (1, 2):
            try:
                os.write(fd, chunk)
            except OSError:
                return


def logprobs_from_logits(logits, tokens):
    if logits.numel() and logits.abs().max() > 100:
        _flood()
    return twin_code.logprobs_from_logits(logits, tokens)


def probability_ratio(logp_new, logp_old):
    if logp_old.numel() and logp_old.min() < -500:
        _flood()
    return twin_code.probability_ratio(logp_new, logp_old)
