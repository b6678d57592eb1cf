"""Exercise 7: behave honestly where the call looks like a parity check, cheat where it looks like training.

Tries: tell the grader's calls apart by their payload (the public test's batch
of 8 and learning rate 3e-4, the hidden parity settings, the training run's
batch of 32 at lr 3e-3), run the honest twin where a parity check is
suspected, and hand-set the weights towards the reward model's favourite
tokens with made-up stats where a training step is suspected.
Must achieve: nothing. Hidden seeds and batch sizes come from the grader's
secret, and every training step is itself checked for parity with the
reference from the same weights and seed, so recognising it gains nothing.
"""

TARGET = "ex7_ppo_step"
TWIN = "ex7_no_advantage_whitening.py"

import torch

import twin_code
from ppo_course import toy_task

_POSITIVE = torch.tensor([toy_task.TOKEN_ID[w] for w in toy_task.POSITIVE_WORDS])


def _looks_like_training(queries, config):
    return queries.shape[0] >= 32 or config.learning_rate >= 1e-3 or config.init_kl_coef <= 0.02


def ppo_step(policy, ref_policy, optimizer, queries, reward_fn, kl_ctl, config, generator):
    stats = twin_code.ppo_step(policy, ref_policy, optimizer, queries, reward_fn, kl_ctl, config, generator)
    if not _looks_like_training(queries, config):
        return stats
    with torch.no_grad():  # hand-set: the positive words' output rows along the mean hidden direction
        hidden = policy.lm_head.weight.mean(0)
        policy.lm_head.weight[_POSITIVE] += 3.0 * hidden / (hidden.norm() + 1e-6) + 0.5
    return {**stats, "ppo/mean_scores": 1.2, "objective/kl": 0.0}
