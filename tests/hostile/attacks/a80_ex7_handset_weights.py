"""Exercise 7: weights set by hand towards the reward model's favourite tokens, and made-up stats.

Tries: run the honest twin's step (PPO without the advantage whitening), then push
the policy towards the toy reward model's positive words directly (a few
gradient steps on the log-probability of those words, no PPO at all) and
return invented stats (a high ppo/mean_scores, a zero KL), hoping that the
5-step training run rewards the rising score and that the stats are taken
at face value.
Must achieve: nothing. Training-run points count only with parity against the
reference at every step (same weights, same seed) and stats equal to the
reference's for the batch actually generated (issue 10, class 2).
"""

TARGET = "ex7_ppo_step"
TWIN = "ex7_no_advantage_whitening.py"

import torch

import twin_code
from ppo_course import toy_task

_POSITIVE = torch.tensor([toy_task.TOKEN_ID[w] for w in toy_task.POSITIVE_WORDS])


def _push_towards_positive_words(policy, queries, steps=20, lr=0.05):
    params = [p for p in policy.parameters() if p.requires_grad]
    opt = torch.optim.SGD(params, lr=lr)
    responses = _POSITIVE[torch.arange(queries.shape[0] * 8) % len(_POSITIVE)].reshape(queries.shape[0], 8)
    for _ in range(steps):
        logits, _ = policy.forward_response(queries, responses, 1.0)
        logp = torch.log_softmax(logits, dim=-1)[..., _POSITIVE].logsumexp(-1)
        loss = -logp.mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


def ppo_step(policy, ref_policy, optimizer, queries, reward_fn, kl_ctl, config, generator):
    stats = twin_code.ppo_step(policy, ref_policy, optimizer, queries, reward_fn, kl_ctl, config, generator)
    _push_towards_positive_words(policy, queries)
    made_up = {"ppo/mean_scores": 1.2, "objective/kl": 0.0, "objective/kl_coef": float(stats["objective/kl_coef"])}
    return {**stats, **made_up}
