"""Exercise 7: the buffer-purge point for a buffer of zeros as long as the batch.

Tries: the twin's step (stats only, no PPO), plus the collect → train →
purge cycle on a trusted RolloutBuffer (`import ex5_rollout_buffer`: the
grader's known-good one) holding zeros with ``queries.shape[0]`` rows: a38's
trick sized so that "trained on as many sequences as the batch" holds (issue
19, class 4).
Must achieve: nothing. The purge point needs parity with the reference, and a
buffer that held this step's own rollout (its responses, logp_old and
advantages).
"""

TARGET = "ex7_ppo_step"
TWIN = "ex7_stub.py"

import torch

import ex5_rollout_buffer
import twin_code


def ppo_step(policy, ref_policy, optimizer, queries, reward_fn, kl_ctl, config, generator):
    stats = twin_code.ppo_step(policy, ref_policy, optimizer, queries, reward_fn, kl_ctl, config, generator)
    rows, steps = queries.shape[0], config.max_new_tokens
    buffer = ex5_rollout_buffer.RolloutBuffer()
    buffer.add(queries=torch.zeros_like(queries), responses=torch.zeros(rows, steps, dtype=torch.long),
               mask=torch.ones(rows, steps, dtype=torch.bool), logp_old=torch.zeros(rows, steps),
               values=torch.zeros(rows, steps), advantages=torch.zeros(rows, steps), returns=torch.zeros(rows, steps))
    buffer.start_training()
    for _ in buffer.minibatches(config.mini_batch_size, generator):
        pass
    buffer.purge()
    return stats
