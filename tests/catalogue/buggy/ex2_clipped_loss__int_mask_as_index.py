"""Buggy: boolean-indexes with the mask as given.

`obj[mask]` is a masked selection only for a bool mask. An int (long) mask is
read as *indices* 0/1 (rows 0 and 1 gathered T times, silently), and a float
mask raises IndexError. The contract accepts bool, int and float masks.
"""
EXERCISE = "ex2_clipped_loss"
DIAGNOSIS = "mask_dtype_unsupported"
DESCRIPTION = "clipped_surrogate_loss uses obj[mask].mean(): right for bool masks, silently wrong for int, raises for float"
SEEN_IN = "classroom mistake (x[mask] assumes a bool mask); cf. MarcoMeter/recurrent-ppo-truncated-bptt#10 on masked_select"

import torch


def clipped_surrogate_loss(logp_new, logp_old, advantages, mask, clip_eps=0.2):
    adv = advantages.detach()
    ratio = torch.exp(logp_new - logp_old.detach())
    obj = torch.min(ratio * adv, torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * adv)
    return -obj[mask].mean()
