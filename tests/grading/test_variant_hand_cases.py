"""Catalogued mistakes (grader/mistakes/buggy_variants.py and its variants_ex*.py) on small cases worked by hand (issue 21, item 12).

Each expected value is computed in the comments from the mistake's description, not from the variant's code.
"""

from __future__ import annotations

import math

import pytest
import torch

from grader.mistakes import buggy_variants
from grader.mistakes.variants_ex4_ex6 import ADAPTIVE_KL_VARIANTS, adaptive_kl_candidates, adaptive_kl_values


def _variant(function: str, diagnosis: str, index: int = 0):
    return [v for d, v in buggy_variants.VARIANTS[function] if d == diagnosis][index]


def _t(rows) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.float64)


def test_gae_shifted_by_one_by_hand():
    """r = (0, 0, 1), V = (0.5, 0.6, 0.7), γ = 0.9, λ = 0.5 (the public hand case of ex4).

    Correct: δ = (0.04, 0.03, 0.3); A_2 = 0.3, A_1 = 0.03 + 0.45·0.3 = 0.165, A_0 = 0.04 + 0.45·0.165 = 0.11425.
    Storing the running advantage before updating it puts A_{t+1} at t and 0 at the last real token:
    A = (0.165, 0.3, 0), returns A + V = (0.665, 0.9, 0.7).
    """
    adv, ret = _variant("compute_gae", "gae_shifted_by_one")(_t([[0.0, 0.0, 1.0]]), _t([[0.5, 0.6, 0.7]]),
                                                             torch.ones(1, 3, dtype=torch.bool), 0.9, 0.5)
    assert torch.allclose(adv, _t([[0.165, 0.3, 0.0]]), atol=1e-12)
    assert torch.allclose(ret, _t([[0.665, 0.9, 0.7]]), atol=1e-12)


def test_gae_shifted_by_one_stops_at_the_last_real_token():
    """r = (0, 1 | 3, 4), V = (0.5, 0.6 | 5, −7), γ = 1, λ = 0.95, 2 real tokens: correct A = (0.48, 0.4);
    shifted: (0.4, 0) on the real tokens (padding is not compared)."""
    mask = torch.tensor([[1.0, 1.0, 0.0, 0.0]])
    adv, _ = _variant("compute_gae", "gae_shifted_by_one")(_t([[0.0, 1.0, 3.0, 4.0]]), _t([[0.5, 0.6, 5.0, -7.0]]),
                                                           mask, 1.0, 0.95)
    assert torch.allclose(adv[:, :2], _t([[0.4, 0.0]]), atol=1e-12)


LOGP, REF = _t([[-1.0, -2.0, 4.0]]), _t([[-1.5, -1.0, -9.0]])
MASK, SCORES = torch.tensor([[1, 1, 0]]), _t([2.0])


def test_k3_shaped_rewards_by_hand():
    """k3 = exp(x) − x − 1 with x = ref_logp − logp = (−0.5, 1): (e^−0.5 − 0.5, e − 2) = (0.1065307, 0.7182818).
    per_token, kl_coef 0.1, score 2: (−0.01065307, 2 − 0.07182818, 0)."""
    k3 = (math.exp(-0.5) - 0.5, math.e - 2.0)
    got = _variant("kl_shaped_rewards", "kl_wrong_estimator")(SCORES, LOGP, REF, MASK, 0.1, "per_token")
    assert torch.allclose(got, _t([[-0.1 * k3[0], 2.0 - 0.1 * k3[1], 0.0]]), atol=1e-12)


@pytest.mark.parametrize("index", [0, 1])
def test_last_token_reward_on_padding_by_hand(index):
    """last_token: score − kl_coef·mean(0.5, −1) = 2 + 0.025 = 2.025, written at column T−1 (index 0) or one past
    the last real token (index 1); both are column 2 here, and the last real token keeps 0."""
    got = _variant("kl_shaped_rewards", "score_on_padding", index)(SCORES, LOGP, REF, MASK, 0.1, "last_token")
    assert torch.allclose(got, _t([[0.0, 0.0, 2.025]]), atol=1e-12)


def test_adaptive_kl_candidates_by_hand():
    """From 0.05 (target 6, horizon 10000), KL 12 over 100 sequences: e = clip(12/6 − 1, ±0.2) = 0.2.
    Correct ×(1 + 0.2·100/10000) = 0.0501; unclipped e = 1: 0.05·1.01 = 0.0505; without n/horizon: 0.05·1.2 = 0.06."""
    found: dict[str, list] = {d: [] for d, _ in ADAPTIVE_KL_VARIANTS}
    for d, values in adaptive_kl_candidates(0.05, 6.0, 10000, [(12.0, 100)], start=True):
        found.setdefault(d, []).append([round(v, 12) for v in values.tolist()])
    assert [0.05, 0.0505] in found["adaptive_kl_no_clip"]
    assert [0.05, 0.06] in found["adaptive_kl_wrong_update"]
    # TRL's default β 0.2 with the right rule: 0.2·(1 + 0.2·100/10000) = 0.2004; never the book's own 0.05.
    assert [0.2, 0.2004] in found["hyperparameter_value_wrong"]
    assert all(v[0] != 0.05 for v in found["hyperparameter_value_wrong"])
    assert "hyperparameter_value_wrong" not in {d for d, _ in adaptive_kl_candidates(0.05, 6.0, 10000, [(12.0, 100)])}
    assert adaptive_kl_values(0.05, 6.0, 10000, [(12.0, 100)]) == pytest.approx([0.0501], abs=1e-15)
