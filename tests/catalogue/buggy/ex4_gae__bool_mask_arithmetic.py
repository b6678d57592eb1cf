"""Buggy: uses `1 - mask` to find the padding, which torch refuses for bool masks.

Written and tested with float masks, it raises TypeError ("Subtraction ... with
a bool tensor is not supported") on the bool masks that the contract accepts.
"""
EXERCISE = "ex4_gae"
DIAGNOSIS = "mask_dtype_unsupported"
DESCRIPTION = "compute_gae computes `1 - mask`: works for int/float masks, raises TypeError for bool masks"
SEEN_IN = "classroom mistake (mask dtype assumptions); see the contract's bool/int/float rule"

import torch


def compute_gae(rewards, values, mask, gamma=1.0, lam=0.95):
    not_done = 1 - mask          # 1 on padding (0 on real tokens) ...
    keep = 1 - not_done          # ... flipped back: 1 on real tokens
    keep = keep.to(rewards.dtype)
    r = rewards.detach() * keep
    v = values.detach() * keep
    T = r.shape[1]
    last = torch.zeros_like(r[:, 0])
    out = [None] * T
    for t in reversed(range(T)):
        nextv = v[:, t + 1] if t < T - 1 else torch.zeros_like(last)
        delta = r[:, t] + gamma * nextv - v[:, t]
        last = (delta + gamma * lam * last) * keep[:, t]
        out[t] = last
    adv = torch.stack(out, dim=1)
    return adv, adv + v
