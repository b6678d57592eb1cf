"""End to end (issue 10, class 1): a submission that returns NaN/inf at ONE position of each output loses
every point that compares that output.

Each poisoned module is the correct solution with its public functions wrapped so that the
first entry of every floating-point output (and every float in a returned stats dict) becomes
NaN or +inf; exercise 7's step runs correctly and then writes NaN into one weight of the policy
and into every stat. Graded by the real grader (sandbox, hidden and public tests, fast profile).
The only tests allowed to pass are listed below with the reason they never look at the values.
"""

from __future__ import annotations

import shutil

import pytest

from grader.grade import grade_submission

from .conftest import SOLUTIONS

pytestmark = pytest.mark.slow

WRAPPER = '''

# ---- test-only poisoning (tests/grading/test_nan_submissions.py) ----
import functools as _functools

import torch as _torch

_BAD = float({value!r})


def _poison(out):
    if isinstance(out, _torch.Tensor) and out.is_floating_point() and out.numel():
        out = out.clone()
        out.view(-1)[0] = _BAD  # entry [0, 0] (or the scalar): always a real position
        return out
    if isinstance(out, tuple):
        return tuple(_poison(v) for v in out)
    if isinstance(out, dict):
        return {{k: (_BAD if isinstance(v, float) else v) for k, v in out.items()}}
    return out


def _wrap(fn):
    @_functools.wraps(fn)
    def wrapped(*args, **kwargs):
        return _poison(fn(*args, **kwargs))
    return wrapped


for _name in {names!r}:
    globals()[_name] = _wrap(globals()[_name])
'''

KL_WRAPPER = '''
_update = AdaptiveKLController.update


def _poisoned_update(self, current_kl, n_steps):
    _update(self, current_kl, n_steps)
    self.value = _BAD


AdaptiveKLController.update = _poisoned_update
'''

PPO_STEP_WRAPPER = '''

# ---- test-only poisoning: a correct step, then NaN in one weight and in every stat ----
_ppo_step = ppo_step


def ppo_step(policy, *args, **kwargs):
    import torch
    stats = _ppo_step(policy, *args, **kwargs)
    with torch.no_grad():
        next(policy.parameters()).view(-1)[0] = float("nan")
    return {k: float("nan") if isinstance(v, float) else v for k, v in stats.items()}
'''

POISONED = {
    "ex1_ratio": ("logprobs_from_logits", "probability_ratio"),
    "ex2_clipped_loss": ("clipped_surrogate_loss",),
    "ex3_full_loss": ("clipped_value_loss", "entropy_from_logits", "ppo_loss"),
    "ex4_gae": ("compute_gae", "whiten"),
    "ex6_kl_reward": ("per_token_kl", "kl_shaped_rewards"),
}

# Tests that never compare an output value, so a poisoned output may pass them (name -> why).
VALUE_BLIND = {
    "test_logprobs_inputs_untouched": "checks that inputs are not modified in place",
    "test_surrogate_inputs_untouched": "checks that inputs are not modified in place",
    "test_losses_inputs_untouched": "checks that inputs are not modified in place",
    "test_gae_whiten_inputs_untouched": "checks that inputs are not modified in place",
    "test_kl_inputs_untouched": "checks that inputs are not modified in place",
    "test_surrogate_no_gradient_into_constants": "gradients into constants: the poisoned entry carries none",
    "test_gae_carries_no_gradient": "no gradient into advantages/returns",
    "test_kl_outputs_carry_no_gradient": "no gradient into the KL outputs",
    "test_whiten_one_element_raises": "checks the ValueError only",
    "test_whiten_raises_for_one_element": "checks the ValueError only",
    # The `Raises:` clauses' tests: they check the ValueError only, and their points wait (`requires:`)
    # for value tests the poisoned outputs fail (asserted below: they score 0 here).
    "test_ratio_rejects_malformed_input": "checks the ValueError only",
    "test_surrogate_rejects_mismatched_shapes": "checks the ValueError only",
    "test_losses_reject_mismatched_shapes": "checks the ValueError only",
    "test_gae_whiten_reject_malformed_input": "checks the ValueError only",
    "test_kl_reward_rejects_malformed_input": "checks the ValueError only",
}
RAISES_TESTS = {name for name in VALUE_BLIND if "reject" in name}


def _poisoned_submission(tmp_path, value: str):
    folder = tmp_path / f"poisoned_{value}"
    folder.mkdir()
    for stem, names in POISONED.items():
        text = (SOLUTIONS / f"{stem}.py").read_text(encoding="utf-8")
        text += WRAPPER.format(value=value, names=names)
        if stem == "ex6_kl_reward":
            text += KL_WRAPPER
        (folder / f"{stem}.py").write_text(text, encoding="utf-8")
    shutil.copy(SOLUTIONS / "ex5_rollout_buffer.py", folder)
    return folder


@pytest.mark.parametrize("value", ["nan", "inf"])
def test_non_finite_outputs_lose_their_points(tmp_path, graded_solutions, value):
    folder = _poisoned_submission(tmp_path, value)
    result = grade_submission(folder, exercises=list(POISONED), profile="fast")
    passed_value_tests = [t.name for t in result.tests
                          if t.status == "passed" and t.max_score > 0 and t.test not in VALUE_BLIND]
    assert passed_value_tests == []
    assert [t.name for t in result.tests if t.test in RAISES_TESTS and t.score > 0] == []
    for stem in POISONED:
        assert result.exercises[stem].score < graded_solutions.exercises[stem].score
        diagnoses = {t.diagnosis for t in result.tests if t.exercise == stem and t.status == "failed"}
        assert diagnoses, stem


def test_ppo_step_writing_nan_loses_the_parity_points(tmp_path):
    folder = tmp_path / "poisoned_ex7"
    folder.mkdir()
    for f in SOLUTIONS.glob("ex*.py"):
        shutil.copy(f, folder / f.name)
    (folder / "ex7_ppo_step.py").write_text(
        (SOLUTIONS / "ex7_ppo_step.py").read_text(encoding="utf-8") + PPO_STEP_WRAPPER, encoding="utf-8")
    result = grade_submission(folder, exercises=["ex7_ppo_step"], profile="fast")
    passed = {t.test for t in result.tests if t.status == "passed" and t.max_score > 0}
    # The wrapped step is correct but for the poison: its controller update and purge may pass.
    assert passed <= {"test_ppo_step_purges_buffer", "test_ppo_step_updates_kl_controller"}, passed
    assert result.exercises["ex7_ppo_step"].score <= 2.0
    stats = [t for t in result.tests if t.test == "test_ppo_step_stats_match_reference"]
    assert stats and stats[0].status == "failed"
