"""Mistake families with a parameter: the models that `grader.mistakes.fit` fits to a student's output.

A catalogued variant (`grader.mistakes.buggy_variants`) is one point of a family: a clip to [0.8, 1.2]
hard-coded, a k3 KL, a shift by one token. A student makes the same mistake with another parameter
(a clip to [0.8, 1.28], γ = 0.99 where the call passed 0.9, a k2 KL), so each family here is a model
``model(a, p)`` of the exercise function's output, with ``a`` the call's bound arguments (defaults
applied) and ``p`` the family's parameter: a float in ``span`` (fitted by `grader.mistakes.fit`), or
one of ``values`` (tried in turn). ``says(a, p)`` is what the feedback shows for the fitted parameter, a
claim and its contrast with the call (hyper-parameters and fitted values only, never a tensor input); ``diagnosis(a, p)`` is the
id it is named by: the catalogue's id where ``p`` lands on a catalogued point (a hard-coded default is
`ignores_hyperparameter`, a shift by +1 of GAE is `gae_shifted_by_one`), the family's own otherwise.

Families: a hyper-parameter's value (ε, the value clip, vf_coef, ent_coef, γ, λ, β), the ratio's clip
bounds (lower or upper alone), the reduction of per-token terms (ex2's surrogate, ex3's value loss and
entropy), the KL estimator and its direction (k1/k2/k3, ex6), a shift of ±1 token (GAE's advantages,
ex6's last-token score), GAE without the bootstrap term, whitening per row.

Sources: Book eq. 5.1, 5.2, 5.9, 5.13, §5.5-5.7; Schulman (2020) "Approximating KL divergence" for
k1/k2/k3; TRL 0.11 `trl/core.py`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass

import torch

import ppo_reference

#: The id a family names when its parameter lands on no catalogued point.
HYPERPARAMETER = "hyperparameter_value_wrong"


@dataclass(frozen=True)
class Family:
    """One parametrised mistake of one exercise function.

    Attributes:
        function: the contract name it models (e.g. "compute_gae").
        model: (bound arguments, parameter) -> the function's full output (a tuple where it returns one).
        says: (bound arguments, fitted parameter) -> (claim, contrast): what the fitted model does (the
            fitted parameter only, the same whatever the call passed) and how it differs from the call's.
        diagnosis: (bound arguments, fitted parameter) -> the diagnosis id (the catalogue's where it lands
            on a catalogued point).
        span: (low, high) of a continuous parameter fitted by `grader.mistakes.fit`, or None.
        values: the discrete parameters tried in turn (when ``span`` is None).
    """

    function: str
    model: Callable[[dict, float], object]
    says: Callable[[dict, float], tuple[str, str]]
    diagnosis: Callable[[dict, float], str]
    span: tuple[float, float] | None = None
    values: tuple = ()


def _m(a: dict) -> torch.Tensor:
    return a["mask"].to(torch.bool)


def _real0(x: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    return torch.where(m, x, torch.zeros((), dtype=x.dtype))


def _token_mean(x: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    return _real0(x, m).sum() / m.sum().to(x.dtype)


def _g(x: float) -> str:
    return f"{x:.3g}"


# --------------------------------------------------------------------------- a hyper-parameter's value
_SYMBOL = {"clip_eps": "ε (clip_eps)", "clip_range_value": "the value clip (clip_range_value)",
           "vf_coef": "vf_coef", "ent_coef": "ent_coef", "gamma": "γ (gamma)", "lam": "λ (lam)",
           "kl_coef": "β (kl_coef)"}


def _default(function: str, hyper: str) -> float:
    return inspect.signature(getattr(ppo_reference, function)).parameters[hyper].default


def _hyper_family(function: str, hyper: str, span: tuple[float, float]) -> Family:
    """The reference itself with one hyper-parameter replaced by the fitted value."""
    def model(a: dict, p: float):
        return getattr(ppo_reference, function)(**{**a, hyper: p})

    def says(a: dict, p: float) -> tuple[str, str]:
        return f"{_SYMBOL[hyper]} = {_g(p)} is used", f"where the call passed {_SYMBOL[hyper]} = {_g(a[hyper])}"

    def diagnosis(a: dict, p: float) -> str:
        return "ignores_hyperparameter" if abs(p - _default(function, hyper)) < 1e-6 else HYPERPARAMETER

    return Family(function, model, says, diagnosis, span=span)


_HYPERS = {
    "clipped_surrogate_loss": (("clip_eps", (0.0, 1.0)),),
    "clipped_value_loss": (("clip_range_value", (0.0, 5.0)),),
    "ppo_loss": (("clip_eps", (0.0, 1.0)), ("clip_range_value", (0.0, 5.0)), ("vf_coef", (0.0, 2.0)),
                 ("ent_coef", (0.0, 1.0))),
    "compute_gae": (("gamma", (0.0, 1.0)), ("lam", (0.0, 1.0))),
    "kl_shaped_rewards": (("kl_coef", (0.0, 2.0)),),
}


# --------------------------------------------------------------------------- the ratio's clip bounds
def _surrogate_terms(a: dict, lo: float, hi: float) -> torch.Tensor:
    """−min(r·Â, clip(r, lo, hi)·Â) per token, [B, T] (eq. 5.1 with the bounds given)."""
    ratio = torch.exp(a["logp_new"] - a["logp_old"])
    adv = a["advantages"]
    return -torch.minimum(ratio * adv, torch.clamp(ratio, lo, hi) * adv)


def _bound_family(which: str) -> Family:
    def model(a: dict, p: float):
        eps = a["clip_eps"]
        lo, hi = (p, 1.0 + eps) if which == "lower" else (1.0 - eps, p)
        return _token_mean(_surrogate_terms(a, lo, hi), _m(a))

    def says(a: dict, p: float) -> tuple[str, str]:
        eps = a["clip_eps"]
        lo, hi = (p, 1.0 + eps) if which == "lower" else (1.0 - eps, p)
        return (f"the ratio's {which} clip bound is {_g(p)}",
                f"(the ratio is clipped to [{_g(lo)}, {_g(hi)}] where [1 − ε, 1 + ε] = [{_g(1.0 - eps)}, {_g(1.0 + eps)}])")

    span = (0.0, 1.0) if which == "lower" else (1.0, 4.0)
    return Family("clipped_surrogate_loss", model, says, lambda a, p: "wrong_clip_bounds", span=span)


# --------------------------------------------------------------------------- the reduction
def _value_terms(a: dict) -> torch.Tensor:
    c, old = a["clip_range_value"], a["old_values"]
    clipped = old + torch.clamp(a["values"] - old, -c, c)
    return torch.maximum((a["values"] - a["returns"]) ** 2, (clipped - a["returns"]) ** 2)


def _entropy_terms(a: dict) -> torch.Tensor:
    logits = a["logits"]
    return -(torch.softmax(logits, -1) * torch.log_softmax(logits, -1)).sum(-1)


_TERMS = {
    "clipped_surrogate_loss": lambda a: _surrogate_terms(a, 1.0 - a["clip_eps"], 1.0 + a["clip_eps"]),
    "clipped_value_loss": _value_terms,
    "entropy_from_logits": _entropy_terms,
}

#: name -> (how it reduces x [B, T] with real tokens m, the sentence, the catalogue's id or None).
_REDUCTIONS: dict[str, tuple[Callable, str, str | None]] = {
    "sum": (lambda x, m: _real0(x, m).sum(), "the sum over the real tokens (not divided by their count)", None),
    "row_sums": (lambda x, m: _real0(x, m).sum(1).mean(),
                 "the per-row sums averaged over the rows (divided by the batch size)", "per_row_sum"),
    "row_means": (lambda x, m: (_real0(x, m).sum(1) / m.sum(1).to(x.dtype)).mean(),
                  "the mean of the per-row means", "per_row_mean"),
    "all_positions": (lambda x, m: _real0(x, m).sum() / x.numel(),
                      "the sum over real tokens divided by every position, padding included", "padding_in_mean"),
    "max_len": (lambda x, m: _real0(x, m).sum() / (x.shape[0] * m.sum(1).max().to(x.dtype)),
                "the sum over real tokens divided by batch size × the longest row", None),
}


def _reduction_family(function: str) -> Family:
    terms = _TERMS[function]

    def model(a: dict, p: str):
        return _REDUCTIONS[p][0](terms(a), _m(a))

    def says(a: dict, p: str) -> tuple[str, str]:
        return f"the per-token terms are reduced as {_REDUCTIONS[p][1]}", "not as the token-level masked mean"

    return Family(function, model, says, lambda a, p: _REDUCTIONS[p][2] or "wrong_reduction",
                  values=tuple(_REDUCTIONS))


# --------------------------------------------------------------------------- the KL estimator
#: name -> (per-token estimator of (logp, ref_logp), the sentence, the catalogue's id)
_ESTIMATORS: dict[str, tuple[Callable, str, str]] = {
    "k1_reversed": (lambda lp, ref: ref - lp, "k1 with the direction reversed (ref_logp − logp)", "kl_wrong_direction"),
    "k2": (lambda lp, ref: 0.5 * (lp - ref) ** 2, "k2 = ½(logp − ref_logp)²", "kl_wrong_estimator"),
    "k3": (lambda lp, ref: torch.exp(ref - lp) - (ref - lp) - 1.0, "k3 = exp(r) − r − 1 with r = ref_logp − logp",
           "kl_wrong_estimator"),
    "k3_reversed": (lambda lp, ref: torch.exp(lp - ref) - (lp - ref) - 1.0,
                    "k3 = exp(r) − r − 1 with r = logp − ref_logp (reversed)", "kl_wrong_estimator"),
    "abs": (lambda lp, ref: (lp - ref).abs(), "|logp − ref_logp|", "kl_wrong_estimator"),
}


def _kl_family() -> Family:
    def model(a: dict, p: str):
        return _real0(_ESTIMATORS[p][0](a["logp"], a["ref_logp"]), _m(a))

    def says(a: dict, p: str) -> tuple[str, str]:
        return f"the per-token KL is {_ESTIMATORS[p][1]}", "where the contract's is k1 = logp − ref_logp"

    return Family("per_token_kl", model, says, lambda a, p: _ESTIMATORS[p][2], values=tuple(_ESTIMATORS))


def _shaped(a: dict, kl: torch.Tensor, score_shift: int = 0) -> torch.Tensor:
    """kl_shaped_rewards from a per-token KL [B, T] (0 on padding), the score (with placement "last_token" the
    whole reward) `score_shift` tokens off each row's last real token (clamped to the row's columns)."""
    m = _m(a)
    B, T = m.shape
    rows = torch.arange(B)
    at = torch.clamp(m.sum(1) - 1 + score_shift, 0, T - 1)  # the last real token, shifted
    out = torch.zeros_like(kl)
    if a["placement"] == "per_token":
        out = -a["kl_coef"] * kl
    else:  # the whole last-token reward lands at the (shifted) position
        out[rows, at] = -a["kl_coef"] * kl.sum(1) / m.sum(1).to(kl.dtype)
    out[rows, at] = out[rows, at] + a["scores"].to(kl.dtype)
    return out


def _shaped_estimator_family() -> Family:
    def model(a: dict, p: str):
        return _shaped(a, _real0(_ESTIMATORS[p][0](a["logp"], a["ref_logp"]), _m(a)))

    def says(a: dict, p: str) -> tuple[str, str]:
        return f"the rewards are shaped with the per-token KL {_ESTIMATORS[p][1]}", "instead of k1 = logp − ref_logp"

    return Family("kl_shaped_rewards", model, says, lambda a, p: _ESTIMATORS[p][2],
                  values=tuple(k for k in _ESTIMATORS if k != "k1_reversed"))


# --------------------------------------------------------------------------- a shift of one token
def _shaped_shift_family() -> Family:
    def model(a: dict, p: int):
        return _shaped(a, _real0(a["logp"] - a["ref_logp"], _m(a)), score_shift=p)

    def says(a: dict, p: int) -> tuple[str, str]:
        where = "before" if p < 0 else "after"
        what = "score" if a["placement"] == "per_token" else "last-token reward"
        return f"the {what} is put one token {where} each row's last real token", ""

    return Family("kl_shaped_rewards", model, says,
                  lambda a, p: "score_on_padding" if p > 0 else "off_by_one_token", values=(-1, 1))


def _gae_parts(a: dict, bootstrap: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(advantages, values zeroed on padding, real mask) of GAE, with or without the γ·V_{t+1} term."""
    m = _m(a)
    r, v = _real0(a["rewards"], m), _real0(a["values"], m)
    v_next = torch.nn.functional.pad(v[:, 1:], (0, 1)) if bootstrap else torch.zeros_like(v)
    deltas = r + a["gamma"] * v_next - v
    adv = torch.zeros_like(r)
    carry = torch.zeros_like(r[:, 0])
    for t in range(r.shape[1] - 1, -1, -1):
        carry = deltas[:, t] + a["gamma"] * a["lam"] * carry
        adv[:, t] = carry
    return adv, v, m


def _gae_shift_family() -> Family:
    def model(a: dict, p: int):
        adv, v, m = _gae_parts(a, bootstrap=True)
        shifted = torch.roll(adv, shifts=-p, dims=1)
        shifted[:, -1 if p > 0 else 0] = 0.0
        shifted = _real0(shifted, m)
        return shifted, shifted + v

    def says(a: dict, p: int) -> tuple[str, str]:
        return f"position t holds the advantage of position t{'+' if p > 0 else '−'}1", "(a shift of one token)"

    return Family("compute_gae", model, says, lambda a, p: "gae_shifted_by_one" if p > 0 else "off_by_one_token",
                  values=(-1, 1))


def _gae_no_bootstrap_family() -> Family:
    def model(a: dict, p: str):
        adv, v, _ = _gae_parts(a, bootstrap=False)
        return adv, adv + v

    def says(a: dict, p: str) -> tuple[str, str]:
        return "δ_t = r_t − V_t is used", "without the bootstrap term γ·V_{t+1} (Book §5.5)"

    return Family("compute_gae", model, says, lambda a, p: "gae_no_bootstrap", values=("only",))


# --------------------------------------------------------------------------- whitening
def _whiten_rows_family() -> Family:
    """Whitening per row; a one-token row's Bessel divisor n − 1 = 0 is kept ("n-1": NaN there) or clamped to 1
    ("n-1 clamped": 0 there, as ``(n - 1).clamp(min=1)``); the two agree on every row of two tokens or more."""
    def model(a: dict, p: str):
        x, m = a["x"].double(), _m(a)
        n = m.sum(1, keepdim=True).double()
        mean = _real0(x, m).sum(1, keepdim=True) / n
        divisor = (n - 1).clamp(min=1) if p == "n-1 clamped" else n - 1
        var = _real0((x - mean) ** 2, m).sum(1, keepdim=True) / divisor
        out = (x - mean) / torch.sqrt(var + 1e-8)
        return (out if a["shift_mean"] else out + mean).to(a["x"].dtype)

    def says(a: dict, p: str) -> tuple[str, str]:
        return "the mean and variance are taken per row", "not over the real tokens of the whole batch"

    return Family("whiten", model, says, lambda a, p: "whiten_per_row", values=("n-1", "n-1 clamped"))


def _table() -> dict[str, list[Family]]:
    table: dict[str, list[Family]] = {}
    for function, hypers in _HYPERS.items():
        table.setdefault(function, []).extend(_hyper_family(function, h, span) for h, span in hypers)
    table["clipped_surrogate_loss"] += [_bound_family("lower"), _bound_family("upper")]
    for function in _TERMS:
        table.setdefault(function, []).append(_reduction_family(function))
    table["per_token_kl"] = [_kl_family()]
    table["kl_shaped_rewards"] += [_shaped_estimator_family(), _shaped_shift_family()]
    table["compute_gae"] += [_gae_shift_family(), _gae_no_bootstrap_family()]
    table["whiten"] = [_whiten_rows_family()]
    return table


#: function name -> its families, in the order they are fitted.
FAMILIES: dict[str, list[Family]] = _table()
