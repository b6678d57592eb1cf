"""An independent oracle for exercises 1-6, built on TRL 0.11.4's `trl.core`.

The catalogue's in-process sanity test compares every entry with this oracle
(and with `solutions/` once they exist): a buggy entry must differ from it on
some probe, a correct variant must match it on all probes. It is written from
the contract (`shared/CONTRACT.md`), not from `solutions/` or `ppo_reference/`,
so that an error shared by those two still shows up here.

Each `exN_*` attribute is a namespace with the public names of that exercise
module, so that a probe can call `oracle.EX4.compute_gae(...)` exactly as it
calls a student module.
"""

from __future__ import annotations

import types

import torch
from trl.core import entropy_from_logits as _trl_entropy
from trl.core import logprobs_from_logits as _trl_logprobs
from trl.core import masked_mean as _trl_masked_mean
from trl.core import masked_var as _trl_masked_var


def _fmask(mask: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """A {0,1} mask in the dtype of `like` (bool/int/float masks all accepted)."""
    return mask.to(dtype=like.dtype)


def _zero_pad(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Padding set to 0 with `where`, so that junk (even inf) cannot leak through 0·x."""
    return torch.where(mask.bool(), x, torch.zeros_like(x))


def masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Token-level masked mean (TRL's `masked_mean`): 0-dim, dtype of `x`."""
    return _trl_masked_mean(_zero_pad(x, mask), _fmask(mask, x))


# ---------------------------------------------------------------- ex1 (Book eq. 5.18-5.20)
def logprobs_from_logits(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """log_softmax(logits)[tokens], [B,T] (TRL `logprobs_from_logits`); ValueError for non-integer tokens
    (the contract's Raises clause; TRL itself gathers whatever it is given)."""
    if tokens.dtype.is_floating_point or tokens.dtype == torch.bool:
        raise ValueError(f"tokens must be integers, got {tokens.dtype}")
    return _trl_logprobs(logits, tokens)


def probability_ratio(logp_new: torch.Tensor, logp_old: torch.Tensor) -> torch.Tensor:
    """exp(logp_new − logp_old) (Book eq. 5.20), a pure function of both inputs.

    The losses detach logp_old themselves; the ratio alone stays differentiable in both. ValueError when the
    two shapes differ (the contract's Raises clause).
    """
    if logp_new.shape != logp_old.shape:
        raise ValueError("logp_new and logp_old must share one shape")
    return torch.exp(logp_new - logp_old)


# ---------------------------------------------------------------- ex2 (Book eq. 5.1)
def clipped_surrogate_loss(logp_new, logp_old, advantages, mask, clip_eps=0.2):
    """−masked_mean(min(r·Â, clip(r)·Â)), written as TRL's max of negated terms; ValueError when the four
    tensors do not share one shape (the contract's Raises clause)."""
    if len({t.shape for t in (logp_new, logp_old, advantages, mask)}) != 1:
        raise ValueError("logp_new, logp_old, advantages and mask must share one shape")
    ratio = probability_ratio(logp_new, logp_old.detach())
    adv = advantages.detach()
    pg_losses = -adv * ratio
    pg_losses2 = -adv * torch.clamp(ratio, 1.0 - clip_eps, 1.0 + clip_eps)
    return masked_mean(torch.max(pg_losses, pg_losses2), mask)


# ---------------------------------------------------------------- ex3 (Book eq. 5.2)
def clipped_value_loss(values, old_values, returns, mask, clip_range_value=0.2):
    """masked_mean(max((V−R)², (V_old + clip(V−V_old, ±c) − R)²)), no ½ (contract)."""
    old = old_values.detach()
    ret = returns.detach()
    clipped = old + torch.clamp(values - old, -clip_range_value, clip_range_value)
    return masked_mean(torch.max((values - ret) ** 2, (clipped - ret) ** 2), mask)


def entropy_from_logits(logits, mask):
    """Masked mean of the per-token entropy (TRL's logsumexp form)."""
    return masked_mean(_trl_entropy(logits), mask)


def ppo_loss(logp_new, logp_old, advantages, values, old_values, returns, logits, mask,
             clip_eps=0.2, clip_range_value=0.2, vf_coef=0.1, ent_coef=0.01):
    """pg + vf_coef·vf − ent_coef·H, with TRL's approx_kl and clipfrac in stats."""
    pg = clipped_surrogate_loss(logp_new, logp_old, advantages, mask, clip_eps)
    vf = clipped_value_loss(values, old_values, returns, mask, clip_range_value)
    ent = entropy_from_logits(logits, mask)
    loss = pg + vf_coef * vf - ent_coef * ent
    with torch.no_grad():
        diff = logp_new - logp_old
        ratio = torch.exp(diff)
        adv = advantages
        clipped = torch.gt(-adv * torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps), -adv * ratio)
        stats = {
            "approx_kl": float(masked_mean(0.5 * diff**2, mask)),
            "clipfrac": float(masked_mean(clipped.to(diff.dtype), mask)),
        }
    return loss, stats


# ---------------------------------------------------------------- ex4 (Book §5.5; GAE)
def compute_gae(rewards, values, mask, gamma=1.0, lam=0.95):
    """TRL's reversed GAE loop on zero-padded rewards/values; returns = A + V."""
    m = _fmask(mask, rewards)
    r = _zero_pad(rewards.detach(), mask)
    v = _zero_pad(values.detach(), mask)
    T = rewards.shape[-1]
    last = torch.zeros_like(r[:, 0])
    out = []
    for t in reversed(range(T)):
        nextv = v[:, t + 1] if t < T - 1 else torch.zeros_like(last)
        delta = r[:, t] + gamma * nextv - v[:, t]
        last = (delta + gamma * lam * last) * m[:, t]
        out.append(last)
    adv = torch.stack(out[::-1], dim=1)
    return adv, adv + v


def whiten(x, mask, shift_mean=True):
    """TRL's `masked_whiten` (unbiased masked variance), raising on < 2 elements."""
    if int(mask.bool().sum()) < 2:
        raise ValueError("whiten needs at least 2 real elements")
    m = _fmask(mask, x)
    xz = _zero_pad(x, mask)
    mean, var = _trl_masked_mean(xz, m), _trl_masked_var(xz, m)
    out = (x - mean) * torch.rsqrt(var + 1e-8)
    return out + mean if not shift_mean else out


# ---------------------------------------------------------------- ex6 (Book §5.5)
def per_token_kl(logp, ref_logp, mask):
    """logp − ref_logp on real tokens, 0 on padding; no gradient."""
    return _zero_pad((logp - ref_logp).detach(), mask)


def kl_shaped_rewards(scores, logp, ref_logp, mask, kl_coef=0.05, placement="per_token"):
    """TRL's per-token shaping, or the book's last-token R = r_RM − β·mean_KL."""
    kl = per_token_kl(logp, ref_logp, mask)
    B, T = kl.shape
    last = mask.bool().long().sum(dim=1) - 1
    rows = torch.arange(B)
    out = torch.zeros_like(kl)
    if placement == "per_token":
        out = -kl_coef * kl
        out[rows, last] += scores.detach().to(kl.dtype)
    elif placement == "last_token":
        row_mean = kl.sum(1) / mask.bool().sum(1).to(kl.dtype)
        out[rows, last] = scores.detach().to(kl.dtype) - kl_coef * row_mean
    else:
        raise ValueError(placement)
    return _zero_pad(out, mask)


class AdaptiveKLController:
    """Ziegler et al. (2019) proportional controller, as TRL's `AdaptiveKLController`."""

    def __init__(self, init_kl_coef=0.05, target=6.0, horizon=10000):
        if target <= 0 or horizon <= 0:  # the contract's Raises clause (TRL does not check)
            raise ValueError(f"target and horizon must be positive, got {target}, {horizon}")
        self.value = float(init_kl_coef)
        self.target = target
        self.horizon = horizon

    def update(self, current_kl, n_steps):
        # float(): the contract's "current_kl: float or 0-dim tensor", value a Python float (TRL's reads a float).
        err = min(max(float(current_kl) / self.target - 1, -0.2), 0.2)
        self.value *= 1 + err * n_steps / self.horizon


EX1 = types.SimpleNamespace(logprobs_from_logits=logprobs_from_logits, probability_ratio=probability_ratio)
EX2 = types.SimpleNamespace(clipped_surrogate_loss=clipped_surrogate_loss)
EX3 = types.SimpleNamespace(clipped_value_loss=clipped_value_loss, entropy_from_logits=entropy_from_logits,
                            ppo_loss=ppo_loss)
EX4 = types.SimpleNamespace(compute_gae=compute_gae, whiten=whiten)
EX6 = types.SimpleNamespace(per_token_kl=per_token_kl, kl_shaped_rewards=kl_shaped_rewards,
                            AdaptiveKLController=AdaptiveKLController)
ORACLES = {"ex1_ratio": EX1, "ex2_clipped_loss": EX2, "ex3_full_loss": EX3, "ex4_gae": EX4,
           "ex6_kl_reward": EX6}


# ---------------------------------------------------------------- ex5 (Book eq. 5.13, §5.5)
class RolloutBuffer:
    """The collect → train → purge buffer of docs/ARCHITECTURE.md (oracle copy)."""

    def __init__(self):
        self.phase = "collect"
        self._chunks: list[dict[str, torch.Tensor]] = []
        self._generation = 0  # bumped by purge: iterators remember the one they were made in

    def add(self, **fields):
        if self.phase != "collect":
            raise RuntimeError("add() is only allowed in the collect phase")
        if not fields:
            raise ValueError("add() needs at least one field")
        sizes = {v.shape[0] for v in fields.values()}
        if len(sizes) != 1:
            raise ValueError("fields disagree on the batch size")
        if self._chunks:
            ref = self._chunks[0]
            if set(ref) != set(fields) or any(ref[k].shape[1:] != v.shape[1:] or ref[k].dtype != v.dtype
                                              for k, v in fields.items()):
                raise ValueError("fields, trailing shapes or dtypes differ from the first add()")
        self._chunks.append({k: v.detach().clone() for k, v in fields.items()})

    def __len__(self):
        return sum(next(iter(c.values())).shape[0] for c in self._chunks)

    def start_training(self):
        if self.phase != "collect" or not self._chunks:
            raise RuntimeError("start_training() needs a non-empty buffer in the collect phase")
        self.phase = "train"

    def minibatches(self, mini_batch_size, generator=None):
        if self.phase != "train":
            raise RuntimeError("minibatches() is only allowed in the train phase")
        if mini_batch_size < 1:
            raise ValueError("mini_batch_size must be >= 1")
        data = {k: torch.cat([c[k] for c in self._chunks]) for k in self._chunks[0]}
        perm = torch.randperm(len(self), generator=generator)
        generation = self._generation

        def _iter():
            for i in range(0, len(perm), mini_batch_size):
                if generation != self._generation:
                    raise RuntimeError("buffer was purged")
                idx = perm[i:i + mini_batch_size]
                yield {k: v[idx] for k, v in data.items()}

        return _iter()

    def purge(self):
        self._chunks = []
        self.phase = "collect"
        self._generation += 1


EX5 = types.SimpleNamespace(RolloutBuffer=RolloutBuffer)
ORACLES["ex5_rollout_buffer"] = EX5
