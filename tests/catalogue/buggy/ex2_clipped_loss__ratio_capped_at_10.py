"""Buggy: clipped_surrogate_loss caps the ratio of the unclipped term at 10 "for safety"; eq. 5.1 bounds only the
gain, so with Â < 0 and r > 10 the penalty r·Â must count in full, with gradient −Â·r (Book eqs. 5.1, 5.9). (Dual-clip
PPO's bound c·Â for Â < 0 is another objective, not the book's.) No variant names the cap (its bound is anyone's
guess): the graders say wrong_value.
"""
EXERCISE = "ex2_clipped_loss"
DIAGNOSIS = "wrong_value"
DESCRIPTION = "clipped_surrogate_loss uses clamp(r, 0, 10) * A as the unclipped term"
SEEN_IN = "classroom mistake (a 'safety' cap on the importance weight)"

import torch


def clipped_surrogate_loss(logp_new, logp_old, advantages, mask, clip_eps=0.2):
    adv = advantages.detach()
    ratio = torch.exp(logp_new - logp_old.detach())
    unclipped = torch.clamp(ratio, 0.0, 10.0) * adv
    clipped = torch.clamp(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * adv
    binds = ((adv > 0) & (ratio >= 1.0 + clip_eps)) | ((adv < 0) & (ratio <= 1.0 - clip_eps))
    objective = torch.where(binds, clipped.detach(), unclipped)
    return -masked_mean(objective, mask)  # noqa: F821 - the solution's, defined above
