"""Public tests, exercise 4 (stop 5): GAE and whitening (Book §5.5)."""

from __future__ import annotations

import torch

from ppo_course.grading_kit.feedback import Mismatch, expect_close, expect_raises
from ppo_course.grading_kit.known_mistakes import known_mistakes
from ppo_course.grading_kit.public_probe import Probe

EXERCISE = "ex4_gae"
KIND = "public"


def _t(rows) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.float64)


def _hand_gae():
    return (_t([[0.0, 0.0, 1.0]]), _t([[0.5, 0.6, 0.7]]), torch.ones(1, 3, dtype=torch.bool)), {"gamma": 0.9, "lam": 0.5}


def _padding_gae():
    return (_t([[0.0, 1.0, 3.0, 4.0]]), _t([[0.5, 0.6, 5.0, -7.0]]), torch.tensor([[1.0, 1.0, 0.0, 0.0]])), {}


def _whiten_case(shift_mean: bool):
    return (_t([[1.0, 2.0, 3.0, 50.0]]), torch.tensor([[True, True, True, False]])), {"shift_mean": shift_mean}


# The catalogued mistakes on these fixed inputs (ppo_course/grading_kit/known_mistakes.py): the same
# variants the hidden tests try, so that a mistake gets one name everywhere.
MISTAKE_CASES = {
    "ex4.hand.advantages": ("compute_gae", _hand_gae, "output[0]"),
    "ex4.hand.returns": ("compute_gae", _hand_gae, "output[1]"),
    "ex4.padding.advantages": ("compute_gae", _padding_gae, "output[0]"),
    "ex4.padding.returns": ("compute_gae", _padding_gae, "output[1]"),
    "ex4.whiten": ("whiten", lambda: _whiten_case(True), "output"),
    "ex4.whiten.no_shift": ("whiten", lambda: _whiten_case(False), "output"),
}


def _pair(out, what):
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise Mismatch("wrong_type", f"compute_gae must return (advantages, returns), got {type(out).__name__}", what)
    return out


def test_gae_hand_case(student):
    """Three real tokens, γ = 0.9, λ = 0.5, worked backwards by hand."""
    # δ_2 = 1 − 0.7 = 0.3 (V_3 = 0: the response ends);  δ_1 = 0 + 0.9·0.7 − 0.6 = 0.03;
    # δ_0 = 0 + 0.9·0.6 − 0.5 = 0.04.  A_2 = 0.3;  A_1 = 0.03 + 0.45·0.3 = 0.165;
    # A_0 = 0.04 + 0.45·0.165 = 0.11425.  returns = A + V = (0.61425, 0.765, 1.0).
    rewards, values = _t([[0.0, 0.0, 1.0]]), _t([[0.5, 0.6, 0.7]])
    mask = torch.ones(1, 3, dtype=torch.bool)
    adv, ret = _pair(student.compute_gae(rewards, values, mask, gamma=0.9, lam=0.5), "compute_gae")
    # Without γ (γ = 1): A = (0.225, 0.25, 0.3). Shifted by one (A_t stored before its update): (0.165, 0.3, 0),
    # returns (0.665, 0.9, 0.7).
    expect_close(adv, _t([[0.11425, 0.165, 0.3]]), rtol=1e-10, atol=1e-10, what="advantages (γ=0.9, λ=0.5)",
                 probe=Probe(student, "ex4.hand.advantages", MISTAKE_CASES),
                 candidates=[("gae_missing_gamma", _t([[0.225, 0.25, 0.3]])),
                             ("gae_shifted_by_one", _t([[0.165, 0.3, 0.0]])), *known_mistakes("ex4.hand.advantages")],
                 inputs="rewards=[0, 0, 1], values=[0.5, 0.6, 0.7]")
    expect_close(ret, _t([[0.61425, 0.765, 1.0]]), rtol=1e-10, atol=1e-10, what="returns (γ=0.9, λ=0.5)",
                 probe=Probe(student, "ex4.hand.returns", MISTAKE_CASES),
                 candidates=[("returns_not_a_plus_v", _t([[0.11425, 0.165, 0.3]])),
                             ("gae_shifted_by_one", _t([[0.665, 0.9, 0.7]])), *known_mistakes("ex4.hand.returns")],
                 inputs="rewards=[0, 0, 1], values=[0.5, 0.6, 0.7]")


def test_gae_stops_at_last_real_token(student):
    """Nothing is bootstrapped from padding: V and A past the last real token are 0."""
    # Real tokens 0, 1 (γ = 1, λ = 0.95); padding holds junk (rewards 3, 4; values 5, −7).
    # δ_1 = 1 + 0 − 0.6 = 0.4 = A_1;  δ_0 = 0 + 0.6 − 0.5 = 0.1;  A_0 = 0.1 + 0.95·0.4 = 0.48.
    # Reading V_2 = 5 gives δ_1 = 5.4 and A_0 = 0.1 + 0.95·5.4 = 5.23. Running the recursion through
    # the padding as well (values unmasked, A not reset): A_3 = 0 + 0 − (−7) = 7; A_2 = −7 − 5 + 0.95·7
    # = −5.35; A_1 = 5.4 + 0.95·(−5.35) = 0.3175; A_0 = 0.1 + 0.95·0.3175 = 0.401625.
    # No masking at all (padding rewards too): δ_3 = 4 + 0 + 7 = 11 = A_3; δ_2 = 3 − 7 − 5 = −9,
    # A_2 = −9 + 0.95·11 = 1.45; δ_1 = 1 + 5 − 0.6 = 5.4, A_1 = 5.4 + 0.95·1.45 = 6.7775;
    # A_0 = 0.1 + 0.95·6.7775 = 6.538625.
    rewards, values = _t([[0.0, 1.0, 3.0, 4.0]]), _t([[0.5, 0.6, 5.0, -7.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0, 0.0]])
    adv, ret = _pair(student.compute_gae(rewards, values, mask), "compute_gae")
    expect_close(adv, _t([[0.48, 0.4, 0.0, 0.0]]), mask=mask, rtol=1e-10, atol=1e-10, what="advantages with padding",
                 probe=Probe(student, "ex4.padding.advantages", MISTAKE_CASES),
                 candidates=[("gae_bootstraps_from_padding", _t([[5.23, 5.4, 0.0, 0.0]])),
                             ("gae_bootstraps_from_padding", _t([[0.401625, 0.3175, 0.0, 0.0]])),
                             ("gae_ignores_mask", _t([[6.538625, 6.7775, 1.45, 11.0]])),
                             ("gae_shifted_by_one", _t([[0.4, 0.0, 0.0, 0.0]])),
                             *known_mistakes("ex4.padding.advantages")],
                 inputs="rewards=[0, 1 | 3, 4], values=[0.5, 0.6 | 5, -7], 2 real tokens")
    # Shifted by one: A = (0.4, 0), returns (0.9, 0.6).
    expect_close(ret, _t([[0.98, 1.0, 0.0, 0.0]]), mask=mask, rtol=1e-10, atol=1e-10, what="returns with padding",
                 probe=Probe(student, "ex4.padding.returns", MISTAKE_CASES),
                 candidates=[("gae_shifted_by_one", _t([[0.9, 0.6, 0.0, 0.0]])), *known_mistakes("ex4.padding.returns")])


def test_whiten_hand_case(student):
    """x = (1, 2, 3) + junk: mean 2, unbiased variance 1 -> (−1, 0, 1); shift_mean=False -> (1, 2, 3)."""
    x = _t([[1.0, 2.0, 3.0, 50.0]])
    mask = torch.tensor([[True, True, True, False]])
    # (x − 2)/sqrt(1 + 1e-8) differs from (−1, 0, 1) by 5e-9; biased variance 2/3 gives ±1.2247.
    expect_close(student.whiten(x, mask), _t([[-1.0, 0.0, 1.0, 0.0]]), mask=mask, rtol=1e-7, atol=1e-7,
                 what="whiten(x, mask)", probe=Probe(student, "ex4.whiten", MISTAKE_CASES),
                 candidates=[("whiten_biased_variance", _t([[-1.5 ** 0.5, 0.0, 1.5 ** 0.5, 0.0]])),
                                                          *known_mistakes("ex4.whiten")],
                 inputs="x=[1, 2, 3 | 50]")
    expect_close(student.whiten(x, mask, shift_mean=False), _t([[1.0, 2.0, 3.0, 0.0]]), mask=mask, rtol=1e-7, atol=1e-7,
                 what="whiten(x, mask, shift_mean=False)",
                 probe=Probe(student, "ex4.whiten.no_shift", MISTAKE_CASES),
                 candidates=[("whiten_shift_mean_ignored", _t([[-1.0, 0.0, 1.0, 0.0]])), *known_mistakes("ex4.whiten.no_shift")],
                 inputs="x=[1, 2, 3 | 50]")


def test_whiten_one_element_raises(student, error_name):
    """One real element: the unbiased variance is undefined, so whiten raises ValueError."""
    x = _t([[4.0, 1.0]])
    mask = torch.tensor([[1, 0]])
    expect_raises(lambda: student.whiten(x, mask), ("ValueError",), "whiten_no_error_for_one_element",
                  what="whiten with one real element", is_error=error_name)
