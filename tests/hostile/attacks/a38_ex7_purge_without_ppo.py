"""Exercise 7: the buffer-purge point for a buffer that never held a rollout.

Tries: the twin's step (stats only, no PPO), plus the collect → train →
purge cycle on a trusted RolloutBuffer (`import ex5_rollout_buffer`: the
grader's known-good one) that holds a single made-up row instead of the
step's batch; the purge test only asked that every trained buffer ends
purged.
Must achieve: nothing. The purge test counts buffers that were trained on
the step's whole batch (as many sequences as prompts) only.
"""

TARGET = "ex7_ppo_step"
TWIN = "ex7_stub.py"

import torch

import ex5_rollout_buffer
import twin_code


def ppo_step(policy, ref_policy, optimizer, queries, reward_fn, kl_ctl, config, generator):
    stats = twin_code.ppo_step(policy, ref_policy, optimizer, queries, reward_fn, kl_ctl, config, generator)
    buffer = ex5_rollout_buffer.RolloutBuffer()
    buffer.add(rewards=torch.zeros(1, 1))
    buffer.start_training()
    buffer.purge()
    return stats
