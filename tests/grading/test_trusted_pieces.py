"""The trusted pieces behind the diagnoses: the ex7 re-implementation equals ppo_reference.ppo_step, and
each buggy variant really differs from the reference (else it could never be told apart)."""

from __future__ import annotations

import pytest
import torch

import ppo_reference as ref
from grader.mistakes import buggy_variants
from grader.mistakes.variants_ex4_ex6 import adaptive_kl_values
from ppo_course.grading_kit.feedback import close
from ppo_course.grading_kit.inputs import prefix_mask

pytestmark = pytest.mark.xdist_group("grader")


def _inputs():
    """A 3 × 5 batch (a full row, a one-token row), junk at padding, float64."""
    g = torch.Generator().manual_seed(0)
    mask = prefix_mask([5, 1, 3], 5, "float")
    m = mask.bool()

    def data(scale=1.0, shift=0.0):
        x = torch.randn(3, 5, generator=g, dtype=torch.float64) * scale + shift
        junk = (torch.rand(3, 5, generator=g, dtype=torch.float64) * 2 - 1) * 20  # |junk| ≤ 20
        return torch.where(m, x, junk)

    logp_old = -data().abs() - 0.1
    logp_new = logp_old + data(0.4)
    return {
        "logprobs_from_logits": ((torch.randn(3, 5, 6, generator=g, dtype=torch.float64) * 3,
                                  torch.randint(0, 6, (3, 5), generator=g)), {}),
        "probability_ratio": ((logp_new, logp_old), {}),
        "clipped_surrogate_loss": ((logp_new, logp_old, data(), mask), {"clip_eps": 0.3}),
        "clipped_value_loss": ((data(), data(), data(), mask), {"clip_range_value": 0.3}),
        "entropy_from_logits": ((torch.randn(3, 5, 6, generator=g, dtype=torch.float64) * 2, mask), {}),
        "ppo_loss": ((logp_new, logp_old, data(), data(), data(), data(),
                      torch.randn(3, 5, 6, generator=g, dtype=torch.float64), mask),
                     {"clip_eps": 0.3, "clip_range_value": 0.3, "vf_coef": 0.5, "ent_coef": 0.1}),
        "compute_gae": ((data(), data(), mask), {"gamma": 0.9, "lam": 0.8}),
        "whiten": ((data(2.0, 1.0), mask), {"shift_mean": False}),
        "per_token_kl": ((logp_new, logp_old, mask), {}),
        "kl_shaped_rewards": ((torch.randn(3, generator=g, dtype=torch.float64), logp_new, logp_old, mask),
                              {"kl_coef": 0.1, "placement": "last_token"}),
    }


# Variants that agree with the reference on ordinary inputs and are told apart by the graders'
# special inputs instead: log-probs of −1000, logits ×1e3, float32 inputs, constant values, other
# arguments or padding positions (compared only where the contract says "0 on padding").
NEEDS_SPECIAL_INPUT = {
    "ratio_in_probability_space", "ratio_clamped", "log_of_softmax", "entropy_unstable", "wrong_dtype", "whiten_missing_eps",
    "kl_unmasked", "rewards_not_zero_on_padding", ("kl_shaped_rewards", "score_on_every_token"),
    ("kl_shaped_rewards", "ignores_hyperparameter"), ("kl_shaped_rewards", "placement_ignored"),
    ("kl_shaped_rewards", "score_on_padding"), ("kl_shaped_rewards", "score_on_first_token"),
    ("ppo_loss", "value_clip_uses_clip_eps"),  # shows only where clip_eps ≠ clip_range_value (0.3 and 0.3 here)
    ("ppo_loss", "value_loss_detached"), ("ppo_loss", "entropy_detached"),  # gradient only: the value is the reference's
}


@pytest.mark.parametrize("name", sorted(buggy_variants.VARIANTS))
def test_every_variant_differs_from_the_reference(name):
    """On a rich input, each diagnosis of `name` has a variant whose output differs from the reference."""
    args, kwargs = _inputs()[name]
    want = getattr(ref, name)(*args, **kwargs)
    mask = args[-1] if name not in ("logprobs_from_logits", "probability_ratio") else None
    if isinstance(mask, torch.Tensor) and mask.dim() != 2:
        mask = None
    differs: dict[str, bool] = {}
    for diagnosis, thunk in buggy_variants.candidates(name, args, kwargs, signature_of=getattr(ref, name)):
        got = thunk()
        if isinstance(want, tuple):  # compute_gae: (advantages, returns); ppo_loss: (loss, stats)
            parts = want if name == "compute_gae" else (want[0],)
            gots = got if name == "compute_gae" else (got,)
            same = all(close(g, w, mask if w.dim() == 2 else None, 1e-9, 1e-9) for g, w in zip(gots, parts))
        else:
            same = close(got, want, mask if want.dim() == 2 else None, 1e-9, 1e-9)
        if diagnosis in NEEDS_SPECIAL_INPUT or (name, diagnosis) in NEEDS_SPECIAL_INPUT:
            continue
        differs[diagnosis] = differs.get(diagnosis, False) or not same
    # Every diagnosis has at least one variant that this input tells apart from the right answer.
    assert [d for d, ok in differs.items() if not ok] == [], f"{name}: variants equal to the reference"


def test_adaptive_controller_rule_matches_the_reference():
    updates = [(30.0, 64), (0.5, 128), (7.2, 256)]
    ctl = ref.AdaptiveKLController(0.1, 4.0, 1000)
    want = [ctl.update(kl, n) for kl, n in updates]
    assert adaptive_kl_values(0.1, 4.0, 1000, updates) == pytest.approx(want, rel=1e-15)


@pytest.mark.slow
def test_reimplemented_ppo_step_equals_the_reference():
    """grader/mistakes/buggy_ppo_step with every switch off gives ppo_reference.ppo_step's parameters and kl_coef exactly."""
    from grader.hidden.test_ex7_ppo_step import make_payload, max_param_diff, run_reference
    from grader.mistakes.buggy_ppo_step import run_reference_step

    payload = make_payload(seed=2)
    ours = run_reference_step(payload)
    theirs = run_reference(payload)
    assert max_param_diff(ours["state_dict"], theirs["state_dict"]) == 0.0
    assert ours["kl_coef"] == theirs["kl_coef"]
    # ...and a mistake moves the weights by far more than the parity tolerance.
    from grader.hidden.test_ex7_ppo_step import PARAM_ATOL

    buggy = run_reference_step(payload, whiten_advantages=False)
    assert max_param_diff(buggy["state_dict"], theirs["state_dict"]) > 10 * PARAM_ATOL


def test_fresh_copy_is_the_one_copy_of_call_arguments():
    """``fresh_copy``: every tensor in nested lists/tuples/dicts cloned and detached, containers keep their type,
    other values are the same objects; the hidden graders and ``check`` both use this one function."""
    import grader.hidden.calls as calls
    import ppo_course.check_support.local as local
    from ppo_course.grading_kit.inputs import fresh_copy

    leaf = torch.tensor([1.0, 2.0], requires_grad=True)
    marker = object()
    args = ([leaf, (torch.tensor([3]), marker)], {"k": torch.zeros(2)})
    got = fresh_copy(args)
    assert type(got) is tuple and type(got[0]) is list and type(got[0][1]) is tuple and type(got[1]) is dict
    assert got[0][1][1] is marker
    assert not got[0][0].requires_grad and got[0][0].data_ptr() != leaf.data_ptr()
    got[0][0].add_(10.0)
    got[1]["k"].fill_(7.0)
    assert leaf.tolist() == [1.0, 2.0] and args[1]["k"].tolist() == [0.0, 0.0]  # the originals are untouched
    assert got[0][0].tolist() == [11.0, 12.0] and got[0][1][0].tolist() == [3]
    assert calls.fresh_copy is fresh_copy and local.fresh_copy is fresh_copy
    assert not hasattr(calls, "_copy") and not hasattr(local, "_copy")
