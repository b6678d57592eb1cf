"""Public tests, exercise 6 (stop 5): per-token KL, KL-shaped rewards, the adaptive KL controller (Book §5.5-5.8)."""

from __future__ import annotations

import torch

from ppo_course.grading_kit.feedback import expect_close, expect_numbers_close, snapshot
from ppo_course.grading_kit.known_mistakes import known_mistakes
from ppo_course.grading_kit.public_probe import Probe

EXERCISE = "ex6_kl_reward"
KIND = "public"

# One row, two real tokens and one padding position (junk): logp − ref_logp = (0.5, −1).
LOGP = torch.tensor([[-1.0, -2.0, 4.0]], dtype=torch.float64)
REF_LOGP = torch.tensor([[-1.5, -1.0, -9.0]], dtype=torch.float64)
MASK = torch.tensor([[1, 1, 0]])
SCORES = torch.tensor([2.0], dtype=torch.float64)

# The catalogued mistakes on these fixed inputs (ppo_course/grading_kit/known_mistakes.py): the same
# variants the hidden tests try, so that a mistake gets one name everywhere. The controller's case is
# (init_kl_coef, target, horizon, [(current_kl, n_steps), ...]).
MISTAKE_CASES = {
    "ex6.kl.hand": ("per_token_kl", lambda: ((LOGP, REF_LOGP, MASK), {}), "output"),
    **{f"ex6.shaped.{p}": ("kl_shaped_rewards",
                           lambda p=p: ((SCORES, LOGP, REF_LOGP, MASK), {"kl_coef": 0.1, "placement": p}), "output")
       for p in ("per_token", "last_token")},
    "ex6.adaptive.hand": ("AdaptiveKLController", lambda: ((0.05, 6.0, 10000, [(12.0, 100), (3.0, 100)]), {}),
                          "output"),
}


def _t(rows) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.float64)


def test_per_token_kl_hand_case(student):
    """logp − ref_logp = (0.5, −1) on real tokens, exactly 0 on padding."""
    expect_close(student.per_token_kl(LOGP, REF_LOGP, MASK), _t([[0.5, -1.0, 0.0]]), rtol=1e-12, atol=1e-12,
                 what="per_token_kl", probe=Probe(student, "ex6.kl.hand", MISTAKE_CASES),
                 candidates=[("kl_wrong_direction", _t([[-0.5, 1.0, 0.0]])),
                                                  ("kl_unmasked", _t([[0.5, -1.0, 13.0]])),
                                                  *known_mistakes("ex6.kl.hand")],
                 inputs="logp=[-1, -2 | 4], ref_logp=[-1.5, -1 | -9]")


def test_shaped_rewards_hand_case(student):
    """per_token: (−0.1·0.5, −0.1·(−1) + 2, 0); last_token: (0, 2 − 0.1·mean(0.5, −1), 0) = (0, 2.025, 0)."""
    got = student.kl_shaped_rewards(SCORES, LOGP, REF_LOGP, MASK, kl_coef=0.1, placement="per_token")
    expect_close(got, _t([[-0.05, 2.1, 0.0]]), rtol=1e-12, atol=1e-12, what="kl_shaped_rewards(per_token)",
                 # An unmasked KL leaves −0.1·(4 − (−9)) = −1.3 on the padding position.
                 probe=Probe(student, "ex6.shaped.per_token", MISTAKE_CASES),
                 candidates=[("score_on_padding", _t([[-0.05, 0.1, 2.0]])), ("kl_penalty_sign", _t([[0.05, 1.9, 0.0]])),
                             ("rewards_not_zero_on_padding", _t([[-0.05, 2.1, -1.3]])),
                             *known_mistakes("ex6.shaped.per_token")],
                 inputs="scores=[2], kl=(0.5, -1 | pad), kl_coef=0.1")
    got = student.kl_shaped_rewards(SCORES, LOGP, REF_LOGP, MASK, kl_coef=0.1, placement="last_token")
    # The sum instead of the mean gives 2 − 0.1·(−0.5) = 2.05.
    expect_close(got, _t([[0.0, 2.025, 0.0]]), rtol=1e-12, atol=1e-12, what="kl_shaped_rewards(last_token)",
                 probe=Probe(student, "ex6.shaped.last_token", MISTAKE_CASES),
                 candidates=[("last_token_sum_instead_of_mean", _t([[0.0, 2.05, 0.0]])),
                             *known_mistakes("ex6.shaped.last_token")],
                 inputs="scores=[2], kl=(0.5, -1 | pad), kl_coef=0.1")


def test_adaptive_kl_hand_case(student):
    """From 0.05 (target 6, horizon 10000): KL 12 over 100 sequences -> ×1.002; KL 3 -> ×0.998."""
    # e = clip(12/6 − 1, ±0.2) = 0.2 -> 0.05·(1 + 0.2·100/10000) = 0.0501;
    # e = clip(3/6 − 1, ±0.2) = −0.2 -> 0.0501·(1 − 0.002) = 0.0499998.
    ctl = student.new("AdaptiveKLController", 0.05, 6.0, 10000)
    ctl.update(12.0, 100)
    first = snapshot(ctl.value)
    ctl.update(3.0, 100)
    # Without the clip: e = 1 -> 0.05·1.01 = 0.0505; then e = −0.5 -> 0.0505·0.995.
    expect_numbers_close([first, ctl.value], _t([0.0501, 0.0501 * 0.998]), rtol=1e-12, atol=1e-15,
                         what="AdaptiveKLController.value",
                         candidates=[("adaptive_kl_no_clip", _t([0.0505, 0.0505 * 0.995])),
                                     *known_mistakes("ex6.adaptive.hand")])
