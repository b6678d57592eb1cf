"""Exercise 7: a malformed trace for the grader's diagnosis code (issue 19, class 6).

Tries: run the honest twin's step (PPO without the advantage whitening), then
reach the observer through the KL controller it was handed
(``kl_ctl._observer``) and replace the recorded trace with junk of the right
event names: a list where the ``add`` event's fields dict belongs, strings for
tensors, a tensor that requires grad, a non-dict event. Before the fix the
parent's diagnosis read it with ``.get`` and raised: the student was recorded
``crashed`` (grader_error) on every rerun, and the grader's own failure hid
the real mistake.
Must achieve: nothing. The parent validates the child's result against a
pydantic schema before reading it (``ppo_course.grading_kit.step_trace``); a
trace that fails is dropped and the step is diagnosed from the parent's own
comparisons (never ``grader_error``), with no more points than the twin.
"""

TARGET = "ex7_ppo_step"
TWIN = "ex7_no_advantage_whitening.py"

import torch

import twin_code


def ppo_step(policy, ref_policy, optimizer, queries, reward_fn, kl_ctl, config, generator):
    stats = twin_code.ppo_step(policy, ref_policy, optimizer, queries, reward_fn, kl_ctl, config, generator)
    observer = getattr(kl_ctl, "_observer", None)
    events = getattr(observer, "events", None)
    if isinstance(events, list):
        events[:] = [{"ev": "generate", "temperature": [1.0], "responses": "tokens"},
                     {"ev": "add", "fields": [torch.zeros(2, 2), "logp_old"]},
                     {"ev": "loss", "loss": torch.ones(1, requires_grad=True)},
                     ["step", {"grad_norm": "big"}], {"ev": {"nested": ["junk"]}}]
    return stats
