"""Known buggy variants of exercises 1-3 (log-probs and the ratio, the clipped surrogate, value loss,
entropy and the full loss), as small trusted functions, with the masked-mean mistakes they share.

The tables (diagnosis id, variant) are looked up through `grader.mistakes.buggy_variants.VARIANTS`
(see its docstring for the rule: first match wins, specific mistakes first). Each variant takes exactly
the arguments of the function it mimics and is written the way the mistake is usually made.

Sources: Book eq. 5.1, 5.2, 5.9, 5.20, §5.7.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

Variant = Callable[..., Any]


# --------------------------------------------------------------------------- helpers
def bool_mask(mask: torch.Tensor) -> torch.Tensor:
    """``mask`` ([B, T], any dtype, 1 = real token) as a bool tensor of the same shape."""
    return mask.to(torch.bool)


def _mm(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Token-level masked mean (the correct reduction)."""
    m = bool_mask(mask)
    return torch.where(m, x, torch.zeros((), dtype=x.dtype)).sum() / m.sum().to(x.dtype)


def _row_mean_then_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """per_row_mean: the mean of each row's masked mean."""
    m = bool_mask(mask)
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
    m = bool_mask(mask)
    return torch.where(m, x, torch.zeros((), dtype=x.dtype)).sum(1).mean()


def _unmasked_sum_over_count(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """padding_in_mean: x.sum() / mask.sum(), junk in the numerator."""
    return x.sum() / bool_mask(mask).sum().to(x.dtype)


_MEAN_MISTAKES: tuple[tuple[str, Callable], ...] = (
    ("per_row_mean", _row_mean_then_mean),
    ("per_row_sum", _row_sums_mean),
    ("padding_in_mean", _times_mask_mean),
    ("padding_in_mean", _plain_mean),
    ("padding_in_mean", _unmasked_sum_over_count),
)


def last_index(mask: torch.Tensor) -> torch.Tensor:
    """[B] index of each row's last real token (masks are prefixes)."""
    return bool_mask(mask).sum(1) - 1


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


def logprobs_negated(logits, tokens):
    """The negative log-likelihood (``F.cross_entropy(..., reduction="none")``, ``nll_loss``): −log π."""
    return -_lsm_gather(torch.log_softmax(logits, dim=-1), tokens)


def ratio_probability_space(logp_new, logp_old):
    return torch.exp(logp_new) / torch.exp(logp_old)


def ratio_inverted(logp_new, logp_old):
    return torch.exp(logp_old - logp_new)


LOGPROBS_VARIANTS: list[tuple[str, Variant]] = [
    ("log_of_softmax", logprobs_log_of_softmax),
    ("softmax_wrong_dim", logprobs_softmax_over_time),
    ("logprobs_misaligned", logprobs_shifted_pad_first),
    ("logprobs_misaligned", logprobs_shifted_drop),
    ("logprobs_misaligned", logprobs_shifted_drop_last),
    ("logprobs_misaligned", logprobs_shifted_zero_first),
    ("logprobs_misaligned", logprobs_shifted_zero_last),
    ("wrong_dtype", logprobs_float32),
    ("logprobs_negated", logprobs_negated),
]

RATIO_VARIANTS: list[tuple[str, Variant]] = [
    ("ratio_in_probability_space", ratio_probability_space),
    ("ratio_inverted", ratio_inverted),
    ("ratio_clamped", lambda logp_new, logp_old: torch.exp(torch.clamp(logp_new - logp_old, -20.0, 20.0))),
]


# --------------------------------------------------------------------------- ex2
def _renormalised(advantages, mask, over: str = "real"):
    """SB3's normalize_advantage: (A − mean)/(std + 1e-8) over the real tokens of the mini-batch (``over="all"``:
    over every position, padding included, as ``adv.mean()`` and ``adv.std()`` on the padded tensor give)."""
    pool = advantages.reshape(-1) if over == "all" else advantages[bool_mask(mask)]
    return (advantages - pool.mean()) / (pool.std() + 1e-8)


def _surrogate(ratio, advantages, mask, clip_eps, *, reduce=_mm, combine=torch.min, sign=-1.0,
               clip_lo=None, clip_hi=None, clip_what="ratio", renormalise: bool | str = False):
    if renormalise:
        advantages = _renormalised(advantages, mask, "all" if renormalise == "all" else "real")
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
    ("ratio_clamped", _csl_variant(ratio_fn=lambda n, o: torch.exp(torch.clamp(n - o, -20.0, 20.0)))),
    ("ignores_hyperparameter", _csl_variant(eps=0.2)),
    ("max_instead_of_min", _csl_variant(combine=torch.max)),
    ("loss_sign_flipped", _csl_variant(sign=1.0)),
    ("clipped_advantage", _csl_variant(clip_what="product")),
    ("clipped_advantage", _csl_variant(clip_what="advantage")),
    ("surrogate_not_clipped", _csl_variant(clip_what="none")),
    # clip(r)·Â alone: the unclipped term of the minimum dropped.
    ("surrogate_clipped_term_only", _csl_variant(combine=lambda unclipped, clipped: clipped)),
    ("advantages_renormalised", _csl_variant(renormalise=True)),
    ("advantages_renormalised", _csl_variant(renormalise="all")),
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
    elif center == "delta_only":  # V_old never added back: the clipped change itself stands for the value
        v_clipped = torch.clamp(values - old_values, -c, c)
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
    ("value_clip_old_values_not_added", _cvl_variant(center="delta_only")),
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
    # −(p·log p).mean(-1): the vocabulary averaged instead of summed, the entropy divided by V.
    ("entropy_mean_over_vocab", lambda logits, mask: _mm(_token_entropy(logits) / logits.shape[-1], mask)),
    ("entropy_unmasked", lambda logits, mask: _times_mask_mean(_token_entropy(logits), mask)),
    *[(d, (lambda r: lambda logits, mask: r(_token_entropy(logits), mask))(r)) for d, r in _MEAN_MISTAKES],
]


def _ppo_loss_variant(*, ent_sign=-1.0, vf_scale=1.0, vf_coef_fixed=None, ent_coef_fixed=None, swapped=False,
                      sampled_entropy=False, value_clip_is_eps=False, detach=()):
    """``detach``: inputs ("values", "logits") detached before their term: the loss's value is the reference's,
    only its gradient misses that path."""
    def variant(logp_new, logp_old, advantages, values, old_values, returns, logits, mask,
                clip_eps=0.2, clip_range_value=0.2, vf_coef=0.1, ent_coef=0.01):
        values = values.detach() if "values" in detach else values
        logits = logits.detach() if "logits" in detach else logits
        pg = _surrogate(torch.exp(logp_new - logp_old), advantages, mask, clip_eps)
        vl = _value_loss(values, old_values, returns, mask, clip_eps if value_clip_is_eps else clip_range_value)
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
    ("value_clip_uses_clip_eps", _ppo_loss_variant(value_clip_is_eps=True)),
    ("entropy_sign", _ppo_loss_variant(ent_sign=0.0)),
    # Gradient only: the term is computed on a detached input (its value is the reference's).
    ("value_loss_detached", _ppo_loss_variant(detach=("values",))),
    ("entropy_detached", _ppo_loss_variant(detach=("logits",))),
    # The mistakes of the pieces (ex2's surrogate, ex3's value loss and entropy) inside ppo_loss.
    *[(d, _ppo_loss_from(pg_variant=v)) for d, v in CSL_VARIANTS],
    *[(d, _ppo_loss_from(vl_variant=v)) for d, v in CVL_VARIANTS if d != "value_loss_half_factor"],
    *[(d, _ppo_loss_from(ent_variant=v)) for d, v in ENTROPY_VARIANTS if d != "entropy_sign"],
]
