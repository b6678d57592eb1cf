"""Honest twin for exercise 7: a step that reports the stats and decays the weights, but never does PPO.

The mistake: ``ppo_step`` returns every stat of the contract (as 0.0) and
shrinks every weight by 0.1 % (a stand-in for "something moved"), without
generating, scoring or updating anything with the optimizer. The public
"runs and reports" test passes (the weights moved; the stats are floats and 0
with lr 0); parity, the KL controller, the buffer purge and the training run
fail. A hostile version has the purge point to gain by purging a buffer
that never held the step's rollout (a38).
"""

import torch

STAT_KEYS = ("ppo/mean_scores", "objective/kl", "objective/kl_coef", "ppo/policy/approx_kl", "ppo/policy/clipfrac",
             "ppo/loss/total", "ppo/loss/value", "ppo/policy/entropy", "time/ppo/generation", "time/ppo/training")


def ppo_step(policy, ref_policy, optimizer, queries, reward_fn, kl_ctl, config, generator):
    with torch.no_grad():
        for p in policy.parameters():
            p.mul_(0.999)
    return {key: 0.0 for key in STAT_KEYS}
