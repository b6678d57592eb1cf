"""Exercise 1: read hidden inputs back through the exception's class name and message.

Tries: on every call that does not look like a public hand case (more than one
row), raise an exception whose class name spells the input's shape and first
values (`ppohostile_2x3_…`, any identifier is allowed by `type()`), as a
subclass of a student class, with a message that repeats the input 100 000
times; the twin answers every other call. If the name or message reached
results.json or feedback.md, the student would learn the hidden inputs.
Must achieve: nothing. Only an allowed built-in name crosses (decoded in the
parent), hidden tests show no message (issue 10, class 3).
"""

TARGET = "ex1_ratio"
TWIN = "ex1_unstable.py"

import twin_code


class StudentBase(Exception):
    pass


def _leak(x):
    values = "_".join(str(int(abs(v) * 1000)) for v in x.reshape(-1)[:8].tolist())
    name = "ppohostile_" + "x".join(map(str, x.shape)) + "_" + values
    return type(name, (StudentBase,), {})("ppohostile " + repr(x.tolist()) * 100_000)


def logprobs_from_logits(logits, tokens):
    if logits.dim() == 3 and logits.shape[0] > 1:
        raise _leak(logits)
    return twin_code.logprobs_from_logits(logits, tokens)


def probability_ratio(logp_new, logp_old):
    if logp_new.dim() == 2 and logp_new.shape[0] > 1:
        raise _leak(logp_new)
    return twin_code.probability_ratio(logp_new, logp_old)
