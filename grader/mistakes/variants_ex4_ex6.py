"""Known buggy variants of exercises 4 and 6 (GAE and whitening; the per-token KL, the shaped rewards and
the adaptive KL controller), as small trusted functions.

The tables (diagnosis id, variant) are looked up through `grader.mistakes.buggy_variants.VARIANTS`;
the controller's candidates (`adaptive_kl_candidates`) are the one candidate list of its tests, hidden
and public (via known_mistakes.json). Exercise 5 (the rollout buffer) has no variants: its behaviours
are in `grader/mistakes/behaviours.yaml`.

Sources: Book §5.5-5.7, eq. 5.13; TRL 0.11 `trl/core.py` and `PPOTrainer` for the placements and the
adaptive KL controller.
"""

from __future__ import annotations

import torch

from grader.mistakes.variants_ex1_ex3 import Variant, bool_mask, last_index


# --------------------------------------------------------------------------- ex4
def _gae(rewards, values, mask, gamma, lam, *, use_mask=True, mask_next_value=True, next_value_same_t=False,
         forward=False, gamma_delta=True, gamma_rec=True, use_lam=True, returns="a_plus_v",
         bootstrap_last=False, mask_carry=True, shifted=False, lam_in_delta=False, mask_rewards=True,
         skip_last=False):
    """GAE with one mistake switched on (all switches off: the correct recursion); ``lam_in_delta``: δ discounts
    V_{t+1} by λ instead of γ; ``mask_rewards=False``: the values are masked, the padding's rewards are not;
    ``skip_last``: the backward loop starts at T − 2 (``range(T - 1)``), so the last column keeps A = 0."""
    B, T = rewards.shape
    dt = rewards.dtype
    m = bool_mask(mask).to(dt) if use_mask else torch.ones_like(rewards)
    r = rewards * m if (use_mask and mask_rewards) else rewards
    v = values * m if (use_mask and mask_next_value) else values
    g_d = (lam if lam_in_delta else gamma) if gamma_delta else 1.0
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
    for t in (range(T) if forward else range(T - (2 if skip_last else 1), -1, -1)):
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
    ("gae_ignores_mask", _gae_variant(mask_rewards=False)),
    ("gae_ignores_mask", _gae_variant(mask_rewards=False, mask_carry=False)),
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
    ("gae_lambda_in_td_error", _gae_variant(lam_in_delta=True)),
    ("gae_shifted_by_one", _gae_variant(shifted=True)),
    ("gae_skips_last_step", _gae_variant(skip_last=True)),
]


def _whiten(x, mask, shift_mean, *, unbiased=True, stats_over="real", eps_inside=True, keep_mean=None,
            scale_only=False, eps_outside=False, mean_over_all=False, var_over_all=False):
    """Whitening with one mistake switched on (all off: the correct masked whitening); ``mean_over_all``: the
    mean alone is taken over every position (``x.mean()``), the variance over the real tokens around it;
    ``var_over_all``: the masked mean, but the squared deviations of every position (padding included) summed
    over the number of real tokens."""
    xd = x.double()
    m = bool_mask(mask)
    if stats_over == "real":
        sel, n = xd[m], m.sum()
    elif stats_over == "all":
        sel, n = xd.reshape(-1), torch.tensor(xd.numel())
    else:  # "zeroed": x * mask over all positions
        sel, n = (xd * m.double()).reshape(-1), torch.tensor(xd.numel())
    mean = xd.mean() if mean_over_all else sel.sum() / n
    deviations = xd.reshape(-1) - mean if var_over_all else sel - mean
    var = (deviations ** 2).sum() / (n - 1 if unbiased else n)
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
    ("whiten_padding_in_stats", _whiten_variant(mean_over_all=True)),
    ("whiten_padding_in_stats", _whiten_variant(var_over_all=True)),
    ("whiten_shift_mean_ignored", _whiten_variant(keep_mean=False)),
    ("whiten_shift_mean_ignored", _whiten_variant(scale_only=True)),
    ("whiten_missing_eps", _whiten_variant(eps_inside=False)),
    ("whiten_missing_eps", _whiten_variant(eps_outside=True)),
]


# --------------------------------------------------------------------------- ex6
def _kl(logp, ref_logp, mask, *, direction=1.0, masked=True):
    kl = direction * (logp - ref_logp)
    return torch.where(bool_mask(mask), kl, torch.zeros((), dtype=kl.dtype)) if masked else kl


def _abs_kl(logp, ref_logp, mask):
    """|logp − ref_logp| on real tokens, 0 on padding (TRL's kl_penalty="abs")."""
    return _kl(logp, ref_logp, mask).abs()


def _k3(logp, ref_logp, mask):
    log_ratio = ref_logp - logp
    k3 = torch.exp(log_ratio) - log_ratio - 1.0
    return torch.where(bool_mask(mask), k3, torch.zeros((), dtype=k3.dtype))


KL_VARIANTS: list[tuple[str, Variant]] = [
    ("kl_wrong_estimator", _k3),
    ("kl_wrong_estimator", _abs_kl),
    ("kl_wrong_direction", lambda logp, ref_logp, mask: _kl(logp, ref_logp, mask, direction=-1.0)),
    ("kl_unmasked", lambda logp, ref_logp, mask: _kl(logp, ref_logp, mask, masked=False)),
    ("kl_unmasked", lambda logp, ref_logp, mask: _kl(logp, ref_logp, mask, direction=-1.0, masked=False)),
]


def _shaped(scores, logp, ref_logp, mask, kl_coef, placement, *, direction=1.0, masked_kl=True,
            score_at="last", penalty_sign=-1.0, last_reduce="mean", coef_fixed=None, estimator="k1",
            full_rows_at_first=False, keep_per_token=False):
    """kl_shaped_rewards with one mistake switched on.

    ``score_at`` "end" / "first_pad" put the score (and, for ``"last_token"``, the whole last-token
    reward) at column T−1 / one past the row's last real token; "replace" writes the score over the last real
    token's penalty instead of adding it; ``full_rows_at_first``: a row with no padding takes token 0 for its last
    real token (found from the first padding position, which it lacks); ``estimator="k3"`` uses GRPO's
    exp(r) − r − 1 (r = ref_logp − logp) as the per-token KL; ``keep_per_token``: "last_token" keeps the
    per-token penalties too (the row's mean penalty is added at its last real token).
    """
    B, T = logp.shape
    m = bool_mask(mask)
    dt = logp.dtype
    kc = kl_coef if coef_fixed is None else coef_fixed
    kl = (_k3(logp, ref_logp, mask) if estimator == "k3" else _abs_kl(logp, ref_logp, mask) if estimator == "abs"
          else direction * (logp - ref_logp))
    kl_m = torch.where(m, kl, torch.zeros((), dtype=dt)) if masked_kl else kl
    last = last_index(mask)
    if full_rows_at_first:
        last = torch.where(m.all(1), torch.zeros_like(last), last)
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
        out = penalty_sign * kc * kl_m if keep_per_token else torch.zeros_like(logp)
        out[rows, last] = out[rows, last] + penalty_sign * kc * row_kl
    if score_at == "last":
        out[rows, last] = out[rows, last] + s
    elif score_at == "replace":  # scatter for scatter_add: the score takes the last token's penalty's place
        out[rows, last] = s
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
    ("kl_wrong_estimator", _shaped_variant(estimator="abs")),
    ("score_on_every_token", _shaped_variant(score_at="every")),
    ("score_on_first_token", _shaped_variant(score_at="first")),
    ("score_replaces_kl_penalty", _shaped_variant(score_at="replace")),
    ("last_token_of_full_row", _shaped_variant(full_rows_at_first=True)),
    # Adding the penalty equals subtracting a reversed KL; per_token_kl's own test tells them
    # apart, so here the sign of the penalty is named.
    ("kl_penalty_sign", _shaped_variant(penalty_sign=1.0)),
    # An unmasked per-token KL leaks junk into padding (per_token) and into the row mean (last_token);
    # per_token_kl's own test names kl_unmasked when that function is the cause.
    ("rewards_not_zero_on_padding", _shaped_variant(masked_kl=False)),
    ("last_token_sum_instead_of_mean", _shaped_variant(last_reduce="sum")),
    ("padding_in_mean", _shaped_variant(last_reduce="mean_over_T")),
    ("last_token_batch_mean", _shaped_variant(last_reduce="batch_mean")),
    ("last_token_keeps_per_token_penalty", _shaped_variant(keep_per_token=True)),
    ("placement_ignored", _shaped_variant(placement_override="per_token")),
    ("placement_ignored", _shaped_variant(placement_override="last_token")),
    ("ignores_hyperparameter", _shaped_variant(coef_fixed=0.05)),
]


def adaptive_kl_values(init_kl_coef: float, target: float, horizon: float,
                       updates: list[tuple[float, int]], *, clip: bool | str = True, rule: str = "trl") -> list[float]:
    """The controller's `value` after each (current_kl, n_steps) update, for one update rule.

    rule "trl" (correct with clip=True): e = clip(kl/target − 1, ±0.2); value *= 1 + e·n/horizon.
    ``clip``: True (both sides), False (none), "upper" (only e ≤ 0.2) or "lower" (only e ≥ −0.2).
    Buggy rules: "no_n_over_h" (value *= 1 + e), "no_n" (value *= 1 + e/h), "int_div" (n // h), "additive" (value += e·n/h),
    "inverted" (e from target/kl), "absolute" (e from kl − target), "sign" (value *= 1 − e·n/h).
    """
    value = float(init_kl_coef)
    out = []
    for current_kl, n_steps in updates:
        err = {"inverted": target / current_kl - 1.0, "absolute": current_kl - target}.get(rule, current_kl / target - 1.0)
        if clip in (True, "upper"):
            err = min(err, 0.2)
        if clip in (True, "lower"):
            err = max(err, -0.2)
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
    ("adaptive_kl_clip_one_sided", {"clip": "upper", "rule": "trl"}),
    ("adaptive_kl_clip_one_sided", {"clip": "lower", "rule": "trl"}),
    ("adaptive_kl_wrong_update", {"clip": True, "rule": "no_n_over_h"}),
    ("adaptive_kl_wrong_update", {"clip": True, "rule": "no_n"}),
    ("adaptive_kl_wrong_update", {"clip": True, "rule": "int_div"}),
    ("adaptive_kl_wrong_update", {"clip": True, "rule": "additive"}),
    ("adaptive_kl_wrong_update", {"clip": True, "rule": "inverted"}),
    ("adaptive_kl_wrong_update", {"clip": True, "rule": "sign"}),
    ("adaptive_kl_wrong_update", {"clip": True, "rule": "absolute"}),
    ("adaptive_kl_wrong_update", {"clip": False, "rule": "no_n_over_h"}),
]


def adaptive_kl_candidates(init_kl_coef: float, target: float, horizon: float, updates: list[tuple[float, int]],
                           start: bool = False) -> list[tuple[str, torch.Tensor]]:
    """(diagnosis id, values) of every ADAPTIVE_KL_VARIANTS rule after each update (float64 [n] tensors).

    The one candidate list of the controller's tests, hidden and public (via known_mistakes.json); with
    ``start`` the initial value is prepended (tests that also compare the starting value).
    """
    head = [float(init_kl_coef)] if start else []
    rules = [(d, torch.tensor(head + adaptive_kl_values(init_kl_coef, target, horizon, updates, **kw),
                              dtype=torch.float64)) for d, kw in ADAPTIVE_KL_VARIANTS]
    if not start:
        return rules
    # The right rule from another library's default β (TRL's 0.2, ...): seen only where the start is compared.
    return rules + [("hyperparameter_value_wrong",
                     torch.tensor([v] + adaptive_kl_values(v, target, horizon, updates), dtype=torch.float64))
                    for v in OTHER_INIT_KL_COEFS if v != float(init_kl_coef)]


#: Initial β values of other libraries and configs (TRL's ``init_kl_coef`` 0.2, and round numbers near the book's 0.05).
OTHER_INIT_KL_COEFS = (0.2, 0.1, 0.02, 0.01, 0.5, 1.0)
