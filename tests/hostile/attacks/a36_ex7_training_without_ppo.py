"""Exercise 7: score the training run by hand-setting the weights, without doing PPO.

Tries: the twin's step (stats only, no update), plus a direct edit of the
policy's weights towards the toy reward model's favourite tokens (public in
`ppo_course.toy_task`): the final LayerNorm's channel 0 becomes a constant 1
and the output rows of the positive words read it with weight 6, so every
sample is full of "good"/"great". No generation, no reward, no optimizer:
the 5-step training run's mean score still rises far above its 0.15 bar.
Must achieve: nothing. Training-run points count only together with
parameter parity against the reference on the same seed (issue 10, class 2).
"""

TARGET = "ex7_ppo_step"
TWIN = "ex7_stub.py"

import torch

import twin_code
from ppo_course import toy_task


def ppo_step(policy, ref_policy, optimizer, queries, reward_fn, kl_ctl, config, generator):
    stats = twin_code.ppo_step(policy, ref_policy, optimizer, queries, reward_fn, kl_ctl, config, generator)
    with torch.no_grad():
        policy.ln_f.weight[0] = 0.0
        policy.ln_f.bias[0] = 1.0
        policy.lm_head.weight[:, 0] = 0.0
        policy.lm_head.weight[toy_task._POSITIVE_IDS, 0] = 6.0
    return stats
