"""Buggy: TRL's GAE loop without zeroing values/rewards on padding first.

TRL multiplies values and rewards by the mask before the loop; drop that line
and V_{t+1} at a row's last real token is the junk in the first padding slot,
and the padding rewards flow back into every real advantage.
"""
EXERCISE = "ex4_gae"
# No masking at all, so the graders name it gae_ignores_mask (the id added for this exact mistake;
# gae_bootstraps_from_padding is kept for a loop that masks r but reads V past the end).
DIAGNOSIS = "gae_ignores_mask"
DESCRIPTION = "compute_gae runs over all T columns without masking: bootstraps from V (and r) in padding"
SEEN_IN = "l294265421/alpaca-rlhf#9 (padding values leak into advantages); deepspeedai/DeepSpeedExamples#672"

import torch


def compute_gae(rewards, values, mask, gamma=1.0, lam=0.95):
    rewards, values = rewards.detach(), values.detach()
    T = rewards.shape[1]
    lastgaelam = torch.zeros_like(rewards[:, 0])
    advantages_reversed = []
    for t in reversed(range(T)):
        nextvalues = values[:, t + 1] if t < T - 1 else torch.zeros_like(lastgaelam)
        delta = rewards[:, t] + gamma * nextvalues - values[:, t]
        lastgaelam = delta + gamma * lam * lastgaelam
        advantages_reversed.append(lastgaelam)
    advantages = torch.stack(advantages_reversed[::-1], dim=1)
    return advantages, advantages + values
