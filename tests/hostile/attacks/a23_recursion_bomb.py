"""Recursion bombs: a C-stack overflow, an endlessly nested result, a self-referencing one.

Tries: on huge logits, unbounded recursion with the recursion limit raised
to 10**6 (the interpreter segfaults); on log-probs around −1000, a result
nested 100 000 levels deep (float64) or a list that contains itself
(float32); and an exception whose __str__/__repr__ recurse forever.
Must achieve: nothing. A dead child is a failed call; the codec refuses
nesting deeper than 64 levels on both sides; exception text is read
defensively in the child.
"""

TARGET = "ex1_ratio"
TWIN = "ex1_unstable.py"

import sys

import twin_code


class Bomb(Exception):
    def __str__(self):
        return str(self)

    def __repr__(self):
        return repr(self)


def _deep(n):
    return _deep(n + 1) + 1


def logprobs_from_logits(logits, tokens):
    if logits.numel() and logits.abs().max() > 100:
        if logits.dtype.is_floating_point and logits.element_size() == 8:
            sys.setrecursionlimit(10**6)
            return _deep(0)
        raise Bomb()
    return twin_code.logprobs_from_logits(logits, tokens)


def probability_ratio(logp_new, logp_old):
    if logp_old.numel() and logp_old.min() < -500:
        if logp_old.element_size() == 8:
            nested = twin_code.probability_ratio(logp_new, logp_old)
            for _ in range(100_000):
                nested = [nested]
            return nested
        loop = [twin_code.probability_ratio(logp_new, logp_old)]
        loop.append(loop)
        return loop
    return twin_code.probability_ratio(logp_new, logp_old)
