"""Buggy: the advantages are not detached, so a gradient flows into them.

The value is right; but when Â comes out of a differentiable critic (or a
test asks for ∂loss/∂Â), the loss trains the critic through the policy term.
The contract: losses treat advantages as constants.
"""
EXERCISE = "ex2_clipped_loss"
DIAGNOSIS = "gradient_into_constants"
DESCRIPTION = "clipped_surrogate_loss lets gradient flow into advantages and logp_old (no detach)"
SEEN_IN = "huggingface/trl#546 review (advantages computed without no_grad, later detached)"

import torch


def clipped_surrogate_loss(logp_new, logp_old, advantages, mask, clip_eps=0.2):
    m = mask.to(logp_new.dtype)
    ratio = torch.exp(logp_new - logp_old)
    obj = torch.min(ratio * advantages, torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * advantages)
    obj = torch.where(mask.bool(), obj, torch.zeros_like(obj))
    return -(obj.sum() / m.sum())
