"""A number kept as a low-precision tensor is named `wrong_type` only when its precision explains the mismatch.

Hand values (the public hand case of ex6): from 0.05, target 6, horizon 10000, KL 12 over 100 sequences gives
0.05·(1 + 0.2·0.01) = 0.0501; then KL 3 gives 0.0501·(1 − 0.002) = 0.0499998. Without the clip: 0.0505, then
0.0505·0.995.
"""

from __future__ import annotations

import types

import pytest
import torch

from ppo_course.grading_kit.feedback import Mismatch, expect_numbers_close, snapshot

WANT = torch.tensor([0.0501, 0.0501 * 0.998], dtype=torch.float64)
NO_CLIP = torch.tensor([0.0505, 0.0505 * 0.995], dtype=torch.float64)


def _check(values):
    expect_numbers_close(values, WANT, rtol=1e-12, atol=1e-15, what="AdaptiveKLController.value",
                         candidates=[("adaptive_kl_no_clip", NO_CLIP)])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_right_numbers_in_a_low_precision_tensor_are_a_wrong_type(dtype):
    with pytest.raises(Mismatch) as caught:
        _check([torch.tensor(0.0501, dtype=dtype), torch.tensor(0.0501 * 0.998, dtype=dtype)])
    assert caught.value.diagnosis == "wrong_type"
    assert str(dtype) in caught.value.detail


def test_a_formula_mistake_in_a_float32_tensor_keeps_its_name():
    with pytest.raises(Mismatch) as caught:
        _check([torch.tensor(0.0505, dtype=torch.float32), torch.tensor(0.0505 * 0.995, dtype=torch.float32)])
    assert caught.value.diagnosis != "wrong_type"  # 0.0505 vs 0.0501 is 8e-3 relative: far beyond float32's 1.2e-7


def test_python_floats_and_float64_tensors_pass_and_a_wrong_float_is_a_wrong_value():
    _check([0.0501, 0.0501 * 0.998])
    _check([torch.tensor(0.0501, dtype=torch.float64), 0.0501 * 0.998])
    with pytest.raises(Mismatch) as caught:
        _check([0.0501, 0.0501 * 0.998 * (1 + 1e-7)])  # a float off by 1e-7 relative: not a question of type
    assert caught.value.diagnosis == "wrong_value"


def test_snapshot_keeps_the_value_a_later_in_place_update_would_change():
    value = torch.tensor(0.0501, dtype=torch.float64)
    first = snapshot(value)
    value.mul_(0.998)
    assert first.item() == 0.0501
    assert snapshot(0.5) == 0.5


def test_the_public_hand_case_names_a_float32_controller_a_wrong_type():
    import importlib

    module = importlib.import_module("ppo_course.public_tests.test_ex6_kl_reward")

    class Controller:
        def __init__(self, init_kl_coef=0.05, target=6.0, horizon=10000):
            self.value, self.target, self.horizon = torch.tensor(init_kl_coef, dtype=torch.float32), target, horizon

        def update(self, current_kl, n_steps):
            e = torch.clamp(torch.as_tensor(current_kl, dtype=torch.float32) / self.target - 1.0, -0.2, 0.2)
            self.value = self.value * (1 + e * n_steps / self.horizon)
            return self.value

    student = types.SimpleNamespace(new=lambda name, *a, **k: Controller(*a, **k))
    with pytest.raises(Mismatch) as caught:
        module.test_adaptive_kl_hand_case(student)
    assert caught.value.diagnosis == "wrong_type"
