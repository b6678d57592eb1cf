"""Honest twin for exercise 2: the clipped surrogate loss averaged over padding too.

The mistake: a plain ``.mean()`` over every position of the [B, T] batch
instead of the masked (token-level) mean of Book eq. 5.1, so the junk in the
padding enters the loss. Rows without padding still come out right, so some
tests pass and a hostile submission built on it has something to gain.
"""

import torch


def clipped_surrogate_loss(logp_new, logp_old, advantages, mask, clip_eps=0.2):
    ratio = torch.exp(logp_new - logp_old.detach())  # (B, T)
    advantages = advantages.detach()
    unclipped = ratio * advantages
    clipped = torch.clamp(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * advantages
    return -torch.minimum(unclipped, clipped).mean()  # mean over padding too
