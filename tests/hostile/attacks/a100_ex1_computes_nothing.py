"""Exercise 1: functions that compute nothing, for the points of properties that doing nothing has.

Tries: the twin has not started (NotImplementedError everywhere, 0 points).
This submission's functions do no work at all: they return None (the
log-probs) or their first argument untouched (the ratio). A function that
computes nothing never modifies its inputs in place, so the hidden
`test_logprobs_inputs_untouched` passed and paid its 0.5 point (and the same
on exercises 2, 3, 4 and 6: 2.5 points of 60 for five empty modules).
Must achieve: nothing. A hidden property test that a function computing
nothing also passes names the value tests it `requires` in
`grader/points.yaml` (`ExercisePoints.counted`): passed, worth 0, until the
values are right.
"""

TARGET = "ex1_ratio"
TWIN = "ex1_stub.py"


def logprobs_from_logits(logits, tokens):
    return None


def probability_ratio(logp_new, logp_old):
    return logp_new
