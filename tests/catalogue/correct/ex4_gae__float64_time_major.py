"""Correct variant: GAE as CleanRL and OpenRLHF write it: a time-major loop over reversed(range(T)) with
`nextvalues`/`lastgaelam`, the mask as a float multiplier (nextnonterminal), computed in float64 and cast
back to the input's dtype; whitening also in float64 and cast back.

Float64 accumulation then a cast gives the float32 answer to within one rounding: inside the parity
tolerance of float32 inputs, identical for float64 ones.
"""
EXERCISE = "ex4_gae"
DESCRIPTION = "compute_gae and whiten in float64 (cast back), time-major loop with nextvalues/lastgaelam"

import torch


def compute_gae(rewards, values, mask, gamma=1.0, lam=0.95):
    if rewards.dim() != 2 or rewards.shape != values.shape or rewards.shape != mask.shape:
        raise ValueError("rewards, values and mask must be 2-D tensors of one shape")
    dtype = rewards.dtype
    with torch.no_grad():
        m = mask.bool()
        r = torch.where(m, rewards.double(), torch.zeros((), dtype=torch.float64))
        v = torch.where(m, values.double(), torch.zeros((), dtype=torch.float64))
        T = r.shape[1]
        steps = []
        lastgaelam = torch.zeros(r.shape[0], dtype=torch.float64)
        for t in reversed(range(T)):
            nextnonterminal = m[:, t + 1].double() if t + 1 < T else torch.zeros(r.shape[0], dtype=torch.float64)
            nextvalues = v[:, t + 1] if t + 1 < T else torch.zeros(r.shape[0], dtype=torch.float64)
            delta = r[:, t] + gamma * nextvalues * nextnonterminal - v[:, t]
            lastgaelam = (delta + gamma * lam * nextnonterminal * lastgaelam) * m[:, t].double()
            steps.append(lastgaelam)
        advantages = torch.stack(steps[::-1], dim=1)
        returns = advantages + v
    return advantages.to(dtype), returns.to(dtype)


def whiten(x, mask, shift_mean=True):
    if x.shape != mask.shape:
        raise ValueError("x and mask must have one shape")
    m = mask.bool()
    n = int(m.sum())
    if n < 2:
        raise ValueError("whiten needs at least 2 real tokens")
    xd = x.double()
    real = xd[m]
    mean = real.mean()
    var = real.var(unbiased=True)
    out = (xd - mean) / torch.sqrt(var + 1e-8)
    if not shift_mean:
        out = out + mean
    return out.to(x.dtype)
