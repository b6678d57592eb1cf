"""Buggy: δ_t uses V_t where V_{t+1} belongs (bootstraps from the wrong time step)."""
EXERCISE = "ex4_gae"
DIAGNOSIS = "gae_wrong_timestep"
DESCRIPTION = "compute_gae computes delta_t = r_t + gamma*V_t - V_t (next value taken at the same step)"
SEEN_IN = "tensorflow/agents#953 (GAE passed the one-before-last value as the final value)"

import torch


def compute_gae(rewards, values, mask, gamma=1.0, lam=0.95):
    m = mask.to(rewards.dtype)
    r = torch.where(mask.bool(), rewards.detach(), torch.zeros_like(rewards))
    v = torch.where(mask.bool(), values.detach(), torch.zeros_like(values))
    T = r.shape[1]
    last = torch.zeros_like(r[:, 0])
    out = [None] * T
    for t in reversed(range(T)):
        delta = r[:, t] + gamma * v[:, t] - v[:, t]
        last = (delta + gamma * lam * last) * m[:, t]
        out[t] = last
    adv = torch.stack(out, dim=1)
    return adv, adv + v
