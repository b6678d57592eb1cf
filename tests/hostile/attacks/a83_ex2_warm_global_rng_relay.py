"""Exercise 2: the malformed-input check decided by the grader's own global random generator.

Tries: the twin's loss; on shapes that do not match (the docstring's
ValueError case) it answers from the input's values: ValueError,
NotImplementedError, TypeError or no error at all. The hidden test builds
those inputs with `torch.randn(2, 3)` without a generator, in the trusted
grading process: they came from whatever that process drew before. In a
warm grader that is the previous student's grading (whose path, e.g. a
failing exercise 7 and its diagnosis runs, moves the generator): a
classmate chooses this student's outcome, and this student's children
read bits of the classmate's path. In a fresh grader it is torch's random
start-up seed: another result on every run.
Must achieve: nothing. The grading process seeds its global generators
before every test from the test's name
(`ppo_course.grading_kit.collect.OutcomeCollector.pytest_runtest_setup`):
the same results.json whoever was graded before, never above the twin.
"""

TARGET = "ex2_clipped_loss"
TWIN = "ex2_unmasked.py"

import twin_code


def clipped_surrogate_loss(logp_new, logp_old, advantages, mask, clip_eps=0.2):
    shapes = {tuple(t.shape) for t in (logp_new, logp_old, advantages, mask)}
    if len(shapes) > 1:
        pick = int(abs(float(logp_new.detach().double().sum())) * 1e6) % 4
        if pick == 0:
            raise ValueError("the four tensors must share one shape")
        if pick == 1:
            raise NotImplementedError("two bits of the grader's generator")
        if pick == 2:
            raise TypeError("two bits of the grader's generator")
    return twin_code.clipped_surrogate_loss(logp_new, logp_old, advantages, mask, clip_eps)
