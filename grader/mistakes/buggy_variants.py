"""Known buggy variants of the exercise functions, as small trusted functions.

When a student's output differs from the reference, the hidden graders
evaluate these variants on the same input; a variant whose output matches the
student's names the mistake (its key is a diagnosis id of
`grader/mistakes/diagnose.py`). Each variant takes exactly the arguments of the
function it mimics and is written the way the mistake is usually made, so the
numbers (including NaN/inf) come out the same.

`VARIANTS[function_name]` is an ordered list of (diagnosis id, variant); the
first match wins, so more specific mistakes come first.

Sources: Book eq. 5.1, 5.2, 5.9, 5.20, §5.5-5.7; TRL 0.11 `trl/core.py` and
`PPOTrainer` for the placements and the adaptive KL controller.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import torch

Variant = Callable[..., Any]


# --------------------------------------------------------------------------- helpers
def _m(mask: torch.Tensor) -> torch.Tensor:
    return mask.to(torch.bool)


def _mm(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Token-level masked mean (the correct reduction)."""
    m = _m(mask)
    return torch.where(m, x, torch.zeros((), dtype=x.dtype)).sum() / m.sum().to(x.dtype)


def _row_mean_then_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """per_row_mean: the mean of each row's masked mean."""
    m = _m(mask)
    rows = torch.where(m, x, torch.zeros((), dtype=x.dtype)).sum(1) / m.sum(1).to(x.dtype)
    return rows.mean()


def _times_mask_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """padding_in_mean: (x * mask).mean(), padding counted in the denominator."""
    return (x * mask.to(x.dtype)).mean()


def _plain_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """padding_in_mean: x.mean(), junk and all."""
    return x.mean()


def _row_sums_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """per_row_sum: (x * mask).sum(1).mean(), per-row sums averaged over rows."""
    m = _m(mask)
    return torch.where(m, x, torch.zeros((), dtype=x.dtype)).sum(1).mean()


def _unmasked_sum_over_count(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """padding_in_mean: x.sum() / mask.sum(), junk in the numerator."""
    return x.sum() / _m(mask).sum().to(x.dtype)


_MEAN_MISTAKES: tuple[tuple[str, Callable], ...] = (
    ("per_row_mean", _row_mean_then_mean),
    ("per_row_sum", _row_sums_mean),
    ("padding_in_mean", _times_mask_mean),
    ("padding_in_mean", _plain_mean),
    ("padding_in_mean", _unmasked_sum_over_count),
)


def _last_index(mask: torch.Tensor) -> torch.Tensor:
    """[B] index of each row's last real token (masks are prefixes)."""
    return _m(mask).sum(1) - 1


# --------------------------------------------------------------------------- ex1
def _lsm_gather(logp_all: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    return logp_all.gather(-1, tokens.long().unsqueeze(-1)).squeeze(-1)


def logprobs_log_of_softmax(logits, tokens):
    return _lsm_gather(torch.log(torch.softmax(logits, dim=-1)), tokens)


def logprobs_softmax_over_time(logits, tokens):
    return _lsm_gather(torch.log_softmax(logits, dim=1), tokens)


def logprobs_shifted_pad_first(logits, tokens):
    lp = torch.log_softmax(logits, dim=-1)
    return _lsm_gather(torch.cat([lp[:, :1], lp[:, :-1]], dim=1), tokens)


def logprobs_shifted_drop(logits, tokens):
    lp = torch.log_softmax(logits, dim=-1)
    return _lsm_gather(lp[:, :-1], tokens[:, 1:])


def logprobs_shifted_drop_last(logits, tokens):
    lp = torch.log_softmax(logits, dim=-1)
    return _lsm_gather(lp[:, 1:], tokens[:, :-1])


def logprobs_shifted_zero_first(logits, tokens):
    got = logprobs_shifted_drop(logits, tokens)
    return torch.cat([torch.zeros_like(got[:, :1]), got], dim=1)


def logprobs_shifted_zero_last(logits, tokens):
    got = logprobs_shifted_drop(logits, tokens)
    return torch.cat([got, torch.zeros_like(got[:, :1])], dim=1)


def logprobs_float32(logits, tokens):
    return _lsm_gather(torch.log_softmax(logits.float(), dim=-1), tokens)


def ratio_probability_space(logp_new, logp_old):
    return torch.exp(logp_new) / torch.exp(logp_old)


def ratio_inverted(logp_new, logp_old):
    return torch.exp(logp_old - logp_new)


# --------------------------------------------------------------------------- ex2
def _renormalised(advantages, mask):
    """SB3's normalize_advantage: (A − mean)/(std + 1e-8) over the real tokens of the mini-batch."""
    real = advantages[_m(mask)]
    return (advantages - real.mean()) / (real.std() + 1e-8)


def _surrogate(ratio, advantages, mask, clip_eps, *, reduce=_mm, combine=torch.min, sign=-1.0,
               clip_lo=None, clip_hi=None, clip_what="ratio", renormalise=False):
    if renormalise:
        advantages = _renormalised(advantages, mask)
    lo = 1.0 - clip_eps if clip_lo is None else clip_lo
    hi = 1.0 + clip_eps if clip_hi is None else clip_hi
    if clip_what == "ratio":
        clipped = torch.clamp(ratio, lo, hi) * advantages
    elif clip_what == "product":
        clipped = torch.clamp(ratio * advantages, lo, hi)
    elif clip_what == "advantage":
        clipped = ratio * torch.clamp(advantages, lo, hi)
    else:  # "none"
        clipped = ratio * advantages
    return sign * reduce(combine(ratio * advantages, clipped), mask)


def _csl_variant(**kw):
    def variant(logp_new, logp_old, advantages, mask, clip_eps=0.2):
        ratio = kw.get("ratio_fn", lambda n, o: torch.exp(n - o))(logp_new, logp_old)
        opts = {k: v for k, v in kw.items() if k not in ("ratio_fn", "eps")}
        eps = kw.get("eps", clip_eps)
        return _surrogate(ratio, advantages, mask, eps, **opts)
    return variant


CSL_VARIANTS: list[tuple[str, Variant]] = [
    ("ratio_in_probability_space", _csl_variant(ratio_fn=lambda n, o: torch.exp(n) / torch.exp(o))),
    ("ratio_inverted", _csl_variant(ratio_fn=lambda n, o: torch.exp(o - n))),
    ("ignores_hyperparameter", _csl_variant(eps=0.2)),
    ("max_instead_of_min", _csl_variant(combine=torch.max)),
    ("loss_sign_flipped", _csl_variant(sign=1.0)),
    ("clipped_advantage", _csl_variant(clip_what="product")),
    ("clipped_advantage", _csl_variant(clip_what="advantage")),
    ("surrogate_not_clipped", _csl_variant(clip_what="none")),
    ("advantages_renormalised", _csl_variant(renormalise=True)),
    *[(d, _csl_variant(reduce=r)) for d, r in _MEAN_MISTAKES],
    ("wrong_clip_bounds", lambda n, o, a, m, clip_eps=0.2: _surrogate(
        torch.exp(n - o), a, m, clip_eps, clip_lo=-clip_eps, clip_hi=clip_eps)),
    ("wrong_clip_bounds", lambda n, o, a, m, clip_eps=0.2: _surrogate(
        torch.exp(n - o), a, m, clip_eps, clip_lo=1.0 / (1.0 + clip_eps), clip_hi=1.0 + clip_eps)),
    ("wrong_clip_bounds", lambda n, o, a, m, clip_eps=0.2: _surrogate(
        torch.exp(n - o), a, m, clip_eps, clip_lo=1.0 + clip_eps, clip_hi=1.0 - clip_eps)),
]


# --------------------------------------------------------------------------- ex3
def _value_loss(values, old_values, returns, mask, c, *, combine=torch.max, reduce=_mm, scale=1.0,
                center="old"):
    if center == "old":
        v_clipped = old_values + torch.clamp(values - old_values, -c, c)
    elif center == "returns":
        v_clipped = returns + torch.clamp(values - returns, -c, c)
    elif center == "returns_old_delta":
        v_clipped = returns + torch.clamp(values - old_values, -c, c)
    else:  # "none"
        v_clipped = values
    return scale * reduce(combine((values - returns) ** 2, (v_clipped - returns) ** 2), mask)


def _cvl_variant(**kw):
    def variant(values, old_values, returns, mask, clip_range_value=0.2):
        c = kw.get("c", clip_range_value)
        return _value_loss(values, old_values, returns, mask, c, **{k: v for k, v in kw.items() if k != "c"})
    return variant


CVL_VARIANTS: list[tuple[str, Variant]] = [
    ("ignores_hyperparameter", _cvl_variant(c=0.2)),
    ("value_loss_half_factor", _cvl_variant(scale=0.5)),
    # Clipping around the returns gives exactly the unclipped loss (|R + clip(V−R) − R| ≤ |V − R|);
    # it is listed first, and its message names both.
    ("value_clip_around_returns", _cvl_variant(center="returns")),
    ("value_clip_around_returns", _cvl_variant(center="returns_old_delta")),
    ("value_loss_min_instead_of_max", _cvl_variant(combine=torch.min)),
    *[(d, _cvl_variant(reduce=r)) for d, r in _MEAN_MISTAKES],
]


def _token_entropy(logits):
    return -(torch.softmax(logits, -1) * torch.log_softmax(logits, -1)).sum(-1)  # [B, T]


def _token_entropy_unstable(logits):
    p = torch.softmax(logits, -1)
    return -(p * torch.log(p)).sum(-1)


ENTROPY_VARIANTS: list[tuple[str, Variant]] = [
    ("entropy_unstable", lambda logits, mask: _mm(_token_entropy_unstable(logits), mask)),
    ("entropy_sign", lambda logits, mask: -_mm(_token_entropy(logits), mask)),
    ("entropy_unmasked", lambda logits, mask: _token_entropy(logits).mean()),
    ("entropy_unmasked", lambda logits, mask: _times_mask_mean(_token_entropy(logits), mask)),
    *[(d, (lambda r: lambda logits, mask: r(_token_entropy(logits), mask))(r)) for d, r in _MEAN_MISTAKES],
]


def _ppo_loss_variant(*, ent_sign=-1.0, vf_scale=1.0, vf_coef_fixed=None, ent_coef_fixed=None, swapped=False,
                      sampled_entropy=False):
    def variant(logp_new, logp_old, advantages, values, old_values, returns, logits, mask,
                clip_eps=0.2, clip_range_value=0.2, vf_coef=0.1, ent_coef=0.01):
        pg = _surrogate(torch.exp(logp_new - logp_old), advantages, mask, clip_eps)
        vl = _value_loss(values, old_values, returns, mask, clip_range_value)
        ent = _mm(-logp_new, mask) if sampled_entropy else _mm(_token_entropy(logits), mask)
        vf = vf_coef if vf_coef_fixed is None else vf_coef_fixed
        ec = ent_coef if ent_coef_fixed is None else ent_coef_fixed
        if swapped:
            vf, ec = ec, vf
        return pg + vf * vf_scale * vl + ent_sign * ec * ent
    return variant


def _ppo_loss_from(pg_variant=None, vl_variant=None, ent_variant=None):
    """ppo_loss built from one mistaken piece (policy loss, value loss or entropy) and correct others."""
    def variant(logp_new, logp_old, advantages, values, old_values, returns, logits, mask,
                clip_eps=0.2, clip_range_value=0.2, vf_coef=0.1, ent_coef=0.01):
        pg = (pg_variant(logp_new, logp_old, advantages, mask, clip_eps) if pg_variant else
              _surrogate(torch.exp(logp_new - logp_old), advantages, mask, clip_eps))
        vl = (vl_variant(values, old_values, returns, mask, clip_range_value) if vl_variant else
              _value_loss(values, old_values, returns, mask, clip_range_value))
        ent = ent_variant(logits, mask) if ent_variant else _mm(_token_entropy(logits), mask)
        return pg + vf_coef * vl - ent_coef * ent
    return variant


PPO_LOSS_VARIANTS: list[tuple[str, Variant]] = [
    ("entropy_sign", _ppo_loss_variant(ent_sign=1.0)),
    ("entropy_from_sampled_token", _ppo_loss_variant(sampled_entropy=True)),
    ("value_loss_half_factor", _ppo_loss_variant(vf_scale=0.5)),
    ("vf_coef_wrong", _ppo_loss_variant(swapped=True)),
    ("vf_coef_wrong", _ppo_loss_variant(vf_coef_fixed=1.0)),
    ("vf_coef_wrong", _ppo_loss_variant(vf_scale=-1.0)),
    ("ignores_hyperparameter", _ppo_loss_variant(vf_coef_fixed=0.1, ent_coef_fixed=0.01)),
    ("entropy_sign", _ppo_loss_variant(ent_sign=0.0)),
    # The mistakes of the pieces (ex2's surrogate, ex3's value loss and entropy) inside ppo_loss.
    *[(d, _ppo_loss_from(pg_variant=v)) for d, v in CSL_VARIANTS],
    *[(d, _ppo_loss_from(vl_variant=v)) for d, v in CVL_VARIANTS if d != "value_loss_half_factor"],
    *[(d, _ppo_loss_from(ent_variant=v)) for d, v in ENTROPY_VARIANTS if d != "entropy_sign"],
]


# --------------------------------------------------------------------------- ex4
def _gae(rewards, values, mask, gamma, lam, *, use_mask=True, mask_next_value=True, next_value_same_t=False,
         forward=False, gamma_delta=True, gamma_rec=True, use_lam=True, returns="a_plus_v",
         bootstrap_last=False, mask_carry=True, shifted=False):
    """GAE with one mistake switched on (all switches off: the correct recursion)."""
    B, T = rewards.shape
    dt = rewards.dtype
    m = _m(mask).to(dt) if use_mask else torch.ones_like(rewards)
    r = rewards * m if use_mask else rewards
    v = values * m if (use_mask and mask_next_value) else values
    g_d = gamma if gamma_delta else 1.0
    g_r = gamma if gamma_rec else 1.0
    lm = lam if use_lam else 1.0
    zero = torch.zeros(B, dtype=dt)
    deltas = []
    for t in range(T):
        if next_value_same_t:
            v_next = v[:, t]
        elif t + 1 < T:
            v_next = v[:, t + 1]
        else:
            v_next = v[:, T - 1] * m[:, T - 1] if bootstrap_last else zero
        deltas.append(r[:, t] + g_d * v_next - v[:, t])
    adv = torch.zeros_like(rewards)
    carry = zero
    for t in (range(T) if forward else range(T - 1, -1, -1)):
        carry = deltas[t] + g_r * lm * carry
        if mask_carry:
            carry = carry * m[:, t]
        adv[:, t] = carry
    if shifted:  # the store before the update: position t holds A_{t+1}, the last position 0
        adv = torch.cat([adv[:, 1:], torch.zeros(B, 1, dtype=dt)], dim=1) * m
    if returns == "a_plus_v":
        ret = adv + v
    elif returns == "advantages":
        ret = adv.clone()
    elif returns == "a_minus_v":
        ret = adv - v
    else:  # "monte_carlo": discounted rewards-to-go
        ret = torch.zeros_like(rewards)
        acc = zero
        for t in range(T - 1, -1, -1):
            acc = (r[:, t] + gamma * acc) * m[:, t]
            ret[:, t] = acc
    return adv, ret


def _gae_variant(**kw):
    def variant(rewards, values, mask, gamma=1.0, lam=0.95):
        return _gae(rewards, values, mask, gamma, lam, **kw)
    return variant


# Each variant returns (advantages, returns); the graders compare the part that failed.
# Order matters where two mistakes coincide: with λ = 1, A + V is the Monte-Carlo return,
# so the returns mistakes come before the missing λ.
GAE_VARIANTS: list[tuple[str, Variant]] = [
    ("gae_bootstraps_from_padding", _gae_variant(mask_next_value=False)),
    # No masking at all: padding rewards accumulate and the last real token bootstraps from padding.
    ("gae_ignores_mask", _gae_variant(use_mask=False)),
    ("gae_bootstraps_from_padding", _gae_variant(bootstrap_last=True)),
    ("gae_bootstraps_from_padding", _gae_variant(mask_next_value=False, mask_carry=False)),
    ("gae_wrong_timestep", _gae_variant(next_value_same_t=True)),
    ("gae_runs_forward", _gae_variant(forward=True)),
    ("returns_not_a_plus_v", _gae_variant(returns="monte_carlo")),
    ("returns_not_a_plus_v", _gae_variant(returns="advantages")),
    ("returns_not_a_plus_v", _gae_variant(returns="a_minus_v")),
    ("gae_missing_gamma", _gae_variant(gamma_delta=False, gamma_rec=False)),
    ("gae_missing_gamma", _gae_variant(gamma_rec=False)),
    ("gae_missing_gamma", _gae_variant(gamma_delta=False)),
    ("gae_missing_lambda", _gae_variant(use_lam=False)),
    ("gae_shifted_by_one", _gae_variant(shifted=True)),
]


def _whiten(x, mask, shift_mean, *, unbiased=True, stats_over="real", eps_inside=True, keep_mean=None,
            scale_only=False, eps_outside=False):
    """Whitening with one mistake switched on (all off: the correct masked whitening)."""
    xd = x.double()
    m = _m(mask)
    if stats_over == "real":
        sel, n = xd[m], m.sum()
    elif stats_over == "all":
        sel, n = xd.reshape(-1), torch.tensor(xd.numel())
    else:  # "zeroed": x * mask over all positions
        sel, n = (xd * m.double()).reshape(-1), torch.tensor(xd.numel())
    mean = sel.sum() / n
    var = ((sel - mean) ** 2).sum() / (n - 1 if unbiased else n)
    std = torch.sqrt(var + 1e-8) if eps_inside else torch.sqrt(var)
    if eps_outside:
        std = torch.sqrt(var) + 1e-8
    if scale_only and not shift_mean:
        return (xd / std).to(x.dtype)
    out = (xd - mean) / std
    add_back = (not shift_mean) if keep_mean is None else keep_mean
    if add_back:
        out = out + mean
    return out.to(x.dtype)


def _whiten_variant(**kw):
    def variant(x, mask, shift_mean=True):
        return _whiten(x, mask, shift_mean, **kw)
    return variant


WHITEN_VARIANTS: list[tuple[str, Variant]] = [
    ("whiten_biased_variance", _whiten_variant(unbiased=False)),
    ("whiten_padding_in_stats", _whiten_variant(stats_over="all")),
    ("whiten_padding_in_stats", _whiten_variant(stats_over="all", unbiased=False)),
    ("whiten_padding_in_stats", _whiten_variant(stats_over="zeroed")),
    ("whiten_padding_in_stats", _whiten_variant(stats_over="zeroed", unbiased=False)),
    ("whiten_shift_mean_ignored", _whiten_variant(keep_mean=False)),
    ("whiten_shift_mean_ignored", _whiten_variant(scale_only=True)),
    ("whiten_missing_eps", _whiten_variant(eps_inside=False)),
    ("whiten_missing_eps", _whiten_variant(eps_outside=True)),
]


# --------------------------------------------------------------------------- ex6
def _kl(logp, ref_logp, mask, *, direction=1.0, masked=True):
    kl = direction * (logp - ref_logp)
    return torch.where(_m(mask), kl, torch.zeros((), dtype=kl.dtype)) if masked else kl


def _k3(logp, ref_logp, mask):
    log_ratio = ref_logp - logp
    k3 = torch.exp(log_ratio) - log_ratio - 1.0
    return torch.where(_m(mask), k3, torch.zeros((), dtype=k3.dtype))


KL_VARIANTS: list[tuple[str, Variant]] = [
    ("kl_wrong_estimator", _k3),
    ("kl_wrong_direction", lambda logp, ref_logp, mask: _kl(logp, ref_logp, mask, direction=-1.0)),
    ("kl_unmasked", lambda logp, ref_logp, mask: _kl(logp, ref_logp, mask, masked=False)),
    ("kl_unmasked", lambda logp, ref_logp, mask: _kl(logp, ref_logp, mask, direction=-1.0, masked=False)),
]


def _shaped(scores, logp, ref_logp, mask, kl_coef, placement, *, direction=1.0, masked_kl=True,
            score_at="last", penalty_sign=-1.0, last_reduce="mean", coef_fixed=None, estimator="k1"):
    """kl_shaped_rewards with one mistake switched on.

    ``score_at`` "end" / "first_pad" put the score (and, for ``"last_token"``, the whole last-token
    reward) at column T−1 / one past the row's last real token; ``estimator="k3"`` uses GRPO's
    exp(r) − r − 1 (r = ref_logp − logp) as the per-token KL.
    """
    B, T = logp.shape
    m = _m(mask)
    dt = logp.dtype
    kc = kl_coef if coef_fixed is None else coef_fixed
    kl = _k3(logp, ref_logp, mask) if estimator == "k3" else direction * (logp - ref_logp)
    kl_m = torch.where(m, kl, torch.zeros((), dtype=dt)) if masked_kl else kl
    last = _last_index(mask)
    if score_at in ("end", "first_pad") and placement != "per_token":  # the whole reward lands there
        last = torch.full_like(last, T - 1) if score_at == "end" else torch.clamp(last + 1, max=T - 1)
        score_at = "last"
    rows = torch.arange(B)
    s = scores.to(dt)
    if placement == "per_token":
        out = penalty_sign * kc * kl_m
    else:
        if last_reduce == "mean":
            row_kl = kl_m.sum(1) / m.sum(1).to(dt)
        elif last_reduce == "sum":
            row_kl = kl_m.sum(1)
        elif last_reduce == "mean_over_T":
            row_kl = kl_m.sum(1) / T
        else:  # "batch_mean"
            row_kl = (kl_m.sum() / m.sum().to(dt)).expand(B)
        out = torch.zeros_like(logp)
        out[rows, last] = penalty_sign * kc * row_kl
    if score_at == "last":
        out[rows, last] = out[rows, last] + s
    elif score_at == "end":
        out[:, T - 1] = out[:, T - 1] + s
    elif score_at == "first_pad":  # one past the last real token (clamped on full rows)
        end = torch.clamp(last + 1, max=T - 1)
        out[rows, end] = out[rows, end] + s
    elif score_at == "first":
        out[:, 0] = out[:, 0] + s
    else:  # "every"
        out = out + torch.where(m, s[:, None].expand(B, T), torch.zeros((), dtype=dt))
    return out


def _shaped_variant(placement_override=None, **kw):
    def variant(scores, logp, ref_logp, mask, kl_coef=0.05, placement="per_token"):
        p = placement if placement_override is None else placement_override
        return _shaped(scores, logp, ref_logp, mask, kl_coef, p, **kw)
    return variant


SHAPED_VARIANTS: list[tuple[str, Variant]] = [
    ("score_on_padding", _shaped_variant(score_at="end")),
    ("score_on_padding", _shaped_variant(score_at="first_pad")),
    # A k3 per-token KL (per_token_kl's own test names it there) shapes the rewards too.
    ("kl_wrong_estimator", _shaped_variant(estimator="k3")),
    ("score_on_every_token", _shaped_variant(score_at="every")),
    ("score_on_first_token", _shaped_variant(score_at="first")),
    # Adding the penalty equals subtracting a reversed KL; per_token_kl's own test tells them
    # apart, so here the sign of the penalty is named.
    ("kl_penalty_sign", _shaped_variant(penalty_sign=1.0)),
    # An unmasked per-token KL leaks junk into padding (per_token) and into the row mean (last_token);
    # per_token_kl's own test names kl_unmasked when that function is the cause.
    ("rewards_not_zero_on_padding", _shaped_variant(masked_kl=False)),
    ("last_token_sum_instead_of_mean", _shaped_variant(last_reduce="sum")),
    ("padding_in_mean", _shaped_variant(last_reduce="mean_over_T")),
    ("per_row_mean", _shaped_variant(last_reduce="batch_mean")),
    ("placement_ignored", _shaped_variant(placement_override="per_token")),
    ("placement_ignored", _shaped_variant(placement_override="last_token")),
    ("ignores_hyperparameter", _shaped_variant(coef_fixed=0.05)),
]


def adaptive_kl_values(init_kl_coef: float, target: float, horizon: float,
                       updates: list[tuple[float, int]], *, clip: bool = True, rule: str = "trl") -> list[float]:
    """The controller's `value` after each (current_kl, n_steps) update, for one update rule.

    rule "trl" (correct with clip=True): e = clip(kl/target − 1, ±0.2); value *= 1 + e·n/horizon.
    Buggy rules: "no_n_over_h" (value *= 1 + e), "no_n" (value *= 1 + e/h), "int_div" (n // h), "additive" (value += e·n/h),
    "inverted" (e from target/kl), "sign" (value *= 1 − e·n/h).
    """
    value = float(init_kl_coef)
    out = []
    for current_kl, n_steps in updates:
        err = (target / current_kl - 1.0) if rule == "inverted" else (current_kl / target - 1.0)
        if clip:
            err = min(max(err, -0.2), 0.2)
        if rule == "no_n_over_h":
            value = value * (1.0 + err)
        elif rule == "no_n":
            value = value * (1.0 + err / horizon)
        elif rule == "int_div":
            value = value * (1.0 + err * (n_steps // horizon))
        elif rule == "additive":
            value = value + err * n_steps / horizon
        elif rule == "sign":
            value = value * (1.0 - err * n_steps / horizon)
        else:
            value = value * (1.0 + err * n_steps / horizon)
        out.append(value)
    return out


ADAPTIVE_KL_VARIANTS: list[tuple[str, dict]] = [
    ("adaptive_kl_no_clip", {"clip": False, "rule": "trl"}),
    ("adaptive_kl_wrong_update", {"clip": True, "rule": "no_n_over_h"}),
    ("adaptive_kl_wrong_update", {"clip": True, "rule": "no_n"}),
    ("adaptive_kl_wrong_update", {"clip": True, "rule": "int_div"}),
    ("adaptive_kl_wrong_update", {"clip": True, "rule": "additive"}),
    ("adaptive_kl_wrong_update", {"clip": True, "rule": "inverted"}),
    ("adaptive_kl_wrong_update", {"clip": True, "rule": "sign"}),
    ("adaptive_kl_wrong_update", {"clip": False, "rule": "no_n_over_h"}),
]


def adaptive_kl_candidates(init_kl_coef: float, target: float, horizon: float, updates: list[tuple[float, int]],
                           start: bool = False) -> list[tuple[str, torch.Tensor]]:
    """(diagnosis id, values) of every ADAPTIVE_KL_VARIANTS rule after each update (float64 [n] tensors).

    The one candidate list of the controller's tests, hidden and public (via known_mistakes.json); with
    ``start`` the initial value is prepended (tests that also compare the starting value).
    """
    head = [float(init_kl_coef)] if start else []
    return [(d, torch.tensor(head + adaptive_kl_values(init_kl_coef, target, horizon, updates, **kw),
                             dtype=torch.float64)) for d, kw in ADAPTIVE_KL_VARIANTS]


# --------------------------------------------------------------------------- lookup
VARIANTS: dict[str, list[tuple[str, Variant]]] = {
    "logprobs_from_logits": [
        ("log_of_softmax", logprobs_log_of_softmax),
        ("softmax_wrong_dim", logprobs_softmax_over_time),
        ("logprobs_misaligned", logprobs_shifted_pad_first),
        ("logprobs_misaligned", logprobs_shifted_drop),
        ("logprobs_misaligned", logprobs_shifted_drop_last),
        ("logprobs_misaligned", logprobs_shifted_zero_first),
        ("logprobs_misaligned", logprobs_shifted_zero_last),
        ("wrong_dtype", logprobs_float32),
    ],
    "probability_ratio": [
        ("ratio_in_probability_space", ratio_probability_space),
        ("ratio_inverted", ratio_inverted),
        ("ratio_clamped", lambda logp_new, logp_old: torch.exp(torch.clamp(logp_new - logp_old, -20.0, 20.0))),
    ],
    "clipped_surrogate_loss": CSL_VARIANTS,
    "clipped_value_loss": CVL_VARIANTS,
    "entropy_from_logits": ENTROPY_VARIANTS,
    "ppo_loss": PPO_LOSS_VARIANTS,
    "compute_gae": GAE_VARIANTS,
    "whiten": WHITEN_VARIANTS,
    "per_token_kl": KL_VARIANTS,
    "kl_shaped_rewards": SHAPED_VARIANTS,
}


def candidates(function: str, args: tuple, kwargs: dict, *, signature_of: Callable,
               pick: Callable[[Any], Any] = lambda out: out) -> list[tuple[str, Callable[[], Any]]]:
    """(diagnosis id, thunk) pairs: each thunk runs one variant of `function` on (args, kwargs).

    Args:
        function: the contract name, a key of VARIANTS.
        args, kwargs: the call as the grader made it (positional and/or keyword).
        signature_of: the reference function; the call is bound to its signature (defaults
            applied) and passed to each variant positionally, in the contract's order.
        pick: selects the compared part of a variant's output (e.g. `lambda o: o[0]` for
            the advantages of compute_gae).

    The thunks run lazily (only when a comparison fails), on copies, under no_grad.

    Raises:
        KeyError: if no variants are registered for `function`.
        TypeError: if (args, kwargs) do not fit the reference signature (a grader bug).
    """
    table = VARIANTS[function]
    bound = inspect.signature(signature_of).bind(*args, **kwargs)
    bound.apply_defaults()
    positional = tuple(bound.arguments.values())

    def thunk(variant):
        def run():
            with torch.no_grad():
                copies = tuple(a.detach().clone() if isinstance(a, torch.Tensor) else a for a in positional)
                return pick(variant(*copies))
        return run

    return [(diagnosis_id, thunk(variant)) for diagnosis_id, variant in table]


def grad_candidates(function: str, args: tuple, kwargs: dict, *, signature_of: Callable, wrt: str,
                    grad_output: torch.Tensor | None = None, output_index: int = 0) -> list[tuple[str, Callable[[], Any]]]:
    """(diagnosis id, thunk) pairs: each thunk returns a variant's gradient w.r.t. parameter `wrt`.

    Same binding rule as `candidates`; the differentiated output is the variant's
    output (element `output_index` of a tuple), contracted with `grad_output`
    (ones for a scalar). A variant that detaches gives zeros, so that a detached
    student gradient is recognised too.
    """
    bound = inspect.signature(signature_of).bind(*args, **kwargs)
    bound.apply_defaults()
    names = list(bound.arguments)
    values = list(bound.arguments.values())
    position = names.index(wrt)

    def thunk(variant):
        def run():
            copies = [v.detach().clone() if isinstance(v, torch.Tensor) else v for v in values]
            leaf = copies[position].requires_grad_(True)
            with torch.enable_grad():
                out = variant(*copies)
                head = out[output_index] if isinstance(out, (tuple, list)) else out
                if not head.requires_grad:
                    return torch.zeros_like(leaf)
                g_out = torch.ones_like(head) if grad_output is None else grad_output.to(head.dtype)
                (grad,) = torch.autograd.grad(head, [leaf], g_out, allow_unused=True)
            return torch.zeros_like(leaf) if grad is None else grad.to(leaf.dtype)
        return run

    return [(diagnosis_id, thunk(variant)) for diagnosis_id, variant in VARIANTS[function]]
