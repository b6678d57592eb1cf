"""Buggy: compute_gae never reads the mask (the textbook recursion over all T columns).

The mask argument is accepted and ignored: the padding rewards accumulate into
the real advantages, and the last real token bootstraps from the value in the
first padding slot. Written the way a first attempt from the Book §5.5 formula
looks (deltas first, then the backward recursion), not TRL's loop.
"""
EXERCISE = "ex4_gae"
DIAGNOSIS = "gae_ignores_mask"
DESCRIPTION = "compute_gae ignores the mask entirely: padding rewards accumulate and the last real token bootstraps from padding"
SEEN_IN = "l294265421/alpaca-rlhf#9 (padding values leak into advantages); fresh-user report of `ppo-course check` (wrong_value before this id)"

import torch


def compute_gae(rewards, values, mask, gamma=1.0, lam=0.95):
    with torch.no_grad():
        next_values = torch.cat([values[:, 1:], torch.zeros_like(values[:, :1])], dim=1)
        deltas = rewards + gamma * next_values - values
        advantages = torch.zeros_like(rewards)
        running = torch.zeros_like(rewards[:, 0])
        for t in range(rewards.shape[1] - 1, -1, -1):
            running = deltas[:, t] + gamma * lam * running
            advantages[:, t] = running
        return advantages, advantages + values
