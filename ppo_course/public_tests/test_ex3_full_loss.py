"""Public tests, exercise 3 (stop 3): clipped value loss, entropy and the full PPO loss (Book eq. 5.2)."""

from __future__ import annotations

import math

import torch

from ppo_course.grading_kit.compare import close_scalar
from ppo_course.grading_kit.feedback import Mismatch, expect_close
from ppo_course.grading_kit.known_mistakes import known_mistakes
from ppo_course.grading_kit.public_probe import Probe

EXERCISE = "ex3_full_loss"
KIND = "public"

LN = math.log


def _scalar(x: float) -> torch.Tensor:
    return torch.tensor(x, dtype=torch.float64)


def _value_case():
    return (torch.tensor([[0.9, 1.0, 2.0, 17.0]], dtype=torch.float64),
            torch.tensor([[0.0, 0.5, 2.1, -11.0]], dtype=torch.float64),
            torch.tensor([[1.0, 0.0, 2.5, 6.0]], dtype=torch.float64), torch.tensor([[1, 1, 1, 0]])), {}


def _entropy_case():
    return (torch.tensor([[[0.0, 0.0], [0.0, LN(3.0)], [0.0, 1000.0], [5.0, -3.0]]], dtype=torch.float64),
            torch.tensor([[True, True, True, False]])), {}


def _ppo_loss_case():
    logp_old = torch.tensor([[-1.0, -1.0]], dtype=torch.float64)
    logp_new = logp_old + torch.tensor([[LN(1.5), LN(0.5)]], dtype=torch.float64)
    zeros = torch.zeros(1, 2, dtype=torch.float64)
    return (logp_new, logp_old, torch.ones(1, 2, dtype=torch.float64), zeros, zeros, zeros,
            torch.zeros(1, 2, 2, dtype=torch.float64), torch.ones(1, 2, dtype=torch.bool)), {}


# The catalogued mistakes on these fixed inputs (ppo_course/grading_kit/known_mistakes.py): the same
# variants the hidden tests try, so that a mistake gets one name everywhere.
MISTAKE_CASES = {
    "ex3.value_loss.hand": ("clipped_value_loss", _value_case, "output"),
    "ex3.entropy.hand": ("entropy_from_logits", _entropy_case, "output"),
    "ex3.ppo_loss.hand": ("ppo_loss", _ppo_loss_case, "output"),  # the variants return the loss only
}


def test_value_loss_hand_case(student):
    """max((V−R)², (V_old + clip(V−V_old, ±0.2) − R)²), masked mean, no ½: 0.63 by hand."""
    # token 0: V=0.9, V_old=0,   R=1:   (V−R)² = 0.01; V_clip = 0 + 0.2 = 0.2 -> (0.2−1)² = 0.64; max 0.64
    # token 1: V=1.0, V_old=0.5, R=0:   (V−R)² = 1;    V_clip = 0.5 + 0.2 = 0.7 -> 0.49;          max 1
    # token 2: V=2.0, V_old=2.1, R=2.5: (V−R)² = 0.25; V_clip = 2.0 (inside the clip) -> 0.25;    max 0.25
    # token 3: padding (junk). Mean over 3 real tokens: (0.64 + 1 + 0.25) / 3 = 0.63.
    (values, old_values, returns, mask), _ = _value_case()
    got = student.clipped_value_loss(values, old_values, returns, mask)
    # Known mistakes on the same numbers: min instead of max (0.01 + 0.49 + 0.25)/3 = 0.25; a ½ factor
    # 0.315; no clip (or a clip around the returns) (0.01 + 1 + 0.25)/3 = 0.42; padding counted 1.89/4.
    expect_close(got, _scalar(0.63), rtol=1e-10, atol=1e-10, what="clipped_value_loss(hand case)",
                 probe=Probe(student, "ex3.value_loss.hand", MISTAKE_CASES),
                 candidates=[("value_loss_min_instead_of_max", _scalar(0.25)), ("value_loss_half_factor", _scalar(0.315)),
                             ("value_clip_around_returns", _scalar(0.42)), ("padding_in_mean", _scalar(1.89 / 4)),
                             *known_mistakes("ex3.value_loss.hand")],
                 inputs="V=[0.9, 1, 2], V_old=[0, 0.5, 2.1], R=[1, 0, 2.5], clip_range_value=0.2")


def test_entropy_hand_case(student):
    """Masked mean of −Σ p log p: logits (0,0) -> ln 2; (0, ln 3) -> 0.5623; (0, 1000) -> 0."""
    # p = (1/2, 1/2): H = ln 2 = 0.693147;  p = (1/4, 3/4): H = ¼·ln 4 + ¾·ln(4/3) = 0.562335;
    # p = (1, e^-1000): H ≈ 1000·e^-1000 = 0 (p·log p must not become 0·(−inf) = NaN).
    (logits, mask), _ = _entropy_case()
    want = (LN(2.0) + (0.25 * LN(4.0) + 0.75 * LN(4.0 / 3.0)) + 0.0) / 3
    got = student.entropy_from_logits(logits, mask)
    expect_close(got, _scalar(want), rtol=1e-10, atol=1e-10, what="entropy_from_logits(hand case)",
                 probe=Probe(student, "ex3.entropy.hand", MISTAKE_CASES),
                 candidates=[("entropy_sign", _scalar(-want)), ("entropy_unstable", _scalar(math.nan)),
                             *known_mistakes("ex3.entropy.hand")],
                 inputs="logits=[[0,0], [0, ln 3], [0, 1000], padding]")


def test_ppo_loss_hand_case(student):
    """loss = −0.85 + 0.1·0 − 0.01·ln 2; approx_kl = ½·mean(Δ²); clipfrac = 0.5."""
    # r = (1.5, 0.5), Â = (1, 1): min(1.5, 1.2) = 1.2 and min(0.5, 0.8) = 0.5 -> surrogate loss −0.85.
    # V = V_old = R = 0 -> value loss 0. Logits (0, 0) on both tokens -> entropy ln 2.
    # approx_kl = ½·(ln² 1.5 + ln² 0.5)/2 = 0.161214; the clip binds on token 0 only -> clipfrac 0.5.
    args, _ = _ppo_loss_case()
    out = student.ppo_loss(*args)
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise Mismatch("wrong_type", f"ppo_loss must return (loss, stats), got {type(out).__name__}", "ppo_loss")
    loss, stats = out
    want = -0.85 - 0.01 * LN(2.0)
    expect_close(loss, _scalar(want), rtol=1e-10, atol=1e-10, what="ppo_loss(hand case)[0]",
                 # max instead of min: max(1.5, 1.2) = 1.5 and max(0.5, 0.8) = 0.8 -> surrogate loss −1.15.
                 probe=Probe(student, "ex3.ppo_loss.hand", MISTAKE_CASES),
                 candidates=[("entropy_sign", _scalar(-0.85 + 0.01 * LN(2.0))),
                             ("max_instead_of_min", _scalar(-1.15 - 0.01 * LN(2.0))),
                             *known_mistakes("ex3.ppo_loss.hand")],
                 inputs="r=(1.5, 0.5), A=(1, 1), V=V_old=R=0, logits 0")
    if not isinstance(stats, dict):
        raise Mismatch("wrong_type", f"stats must be a dict, got {type(stats).__name__}", "ppo_loss(...)[1]")
    for key, want_value, diagnosis in (("approx_kl", 0.5 * (LN(1.5) ** 2 + LN(0.5) ** 2) / 2, "approx_kl_wrong"),
                                       ("clipfrac", 0.5, "clipfrac_wrong")):
        value = stats.get(key)
        if type(value) is not float:
            raise Mismatch("stats_not_floats" if value is not None else diagnosis,
                           f"stats[{key!r}] is {value!r}", "ppo_loss stats")
        if not close_scalar(value, want_value, rtol=0.0, atol=1e-10):
            raise Mismatch(diagnosis, f"  expected {want_value!r}, got {value!r}", f"stats[{key!r}]")
