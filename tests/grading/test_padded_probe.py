"""A function that raises on a full row can still have its mistake named: the probe with every row padded.

The evidence rule names a mistake when it matches the failing input AND the student's output on a rich
probe (4 rows of 7 tokens, lengths 7, 1, 4, 6). A student who indexes the score at ``mask.sum(1)`` (one past
the last real token) raises on the probe's full row, so before it was never named; now the same probe with
every row padded (lengths 6, 1, 4, 6) is the second input. A function that raises there too is named nothing.
"""

from __future__ import annotations

import types

import pytest
import torch

import ppo_reference as R
from grader.hidden.evidence import confirm
from grader.mistakes import buggy_variants
from ppo_course.grading_kit.feedback import Mismatch


def _one_past_last(scores, logp, ref_logp, mask, kl_coef=0.05, placement="per_token"):
    """The score at index n_real (the first padding position): scatter_add raises on a row with no padding."""
    real = mask.bool()
    kl = torch.where(real, logp - ref_logp, torch.zeros_like(logp))
    n_real = real.sum(dim=1)
    if placement == "per_token":
        rewards, final = torch.where(real, -kl_coef * kl, torch.zeros_like(kl)), scores.to(kl.dtype)
    else:
        rewards, final = torch.zeros_like(kl), scores.to(kl.dtype) - kl_coef * kl.sum(dim=1) / n_real
    return rewards.scatter_add(1, n_real.unsqueeze(1), final.unsqueeze(1))


def _raises_on_four_rows(scores, logp, ref_logp, mask, kl_coef=0.05, placement="per_token"):
    """Like `_one_past_last` on small batches, but fails on any batch of 4 rows (both probes)."""
    if logp.shape[0] == 4:
        raise RuntimeError("no")
    return _one_past_last(scores, logp, ref_logp, mask, kl_coef, placement)


def _failing_call():
    """A batch of 3 rows of 5 tokens, lengths 2, 4, 1: no full row, so the student's code runs."""
    g = torch.Generator().manual_seed(11)
    mask = torch.arange(5)[None, :] < torch.tensor([2, 4, 1])[:, None]
    logp = -torch.rand(3, 5, generator=g, dtype=torch.float64)
    ref_logp = -torch.rand(3, 5, generator=g, dtype=torch.float64)
    scores = torch.randn(3, generator=g, dtype=torch.float64)
    return (scores, logp, ref_logp, mask), mask


@pytest.mark.parametrize("placement", ["per_token", "last_token"])
@pytest.mark.parametrize("student_fn, named", [(_one_past_last, "score_on_padding"),
                                               (_raises_on_four_rows, "wrong_value")])
def test_hidden_evidence_falls_back_to_the_padded_probe(student_fn, named, placement):
    args, mask = _failing_call()
    kwargs = {"kl_coef": 0.1, "placement": placement}
    student = types.SimpleNamespace(kl_shaped_rewards=student_fn)
    with pytest.raises(RuntimeError):  # the probe's full row (length 7 of 7) is out of the student's reach
        _one_past_last(*(torch.ones(1), torch.zeros(1, 3), torch.zeros(1, 3), torch.ones(1, 3, dtype=torch.bool)))
    got, want = student_fn(*args, **kwargs), R.kl_shaped_rewards(*args, **kwargs)
    assert not torch.allclose(got, want)
    candidates = buggy_variants.candidates("kl_shaped_rewards", args, kwargs, signature_of=R.kl_shaped_rewards)
    assert confirm("wrong_value", student, R, "kl_shaped_rewards", got, want, candidates, args, kwargs,
                   lambda o: o, lambda o: o, 1e-9, 1e-9, mask) == named


@pytest.mark.parametrize("student_fn, named", [(_one_past_last, "score_on_padding"),
                                               (_raises_on_four_rows, "wrong_value")])
def test_public_probe_falls_back_to_the_padded_probe(student_fn, named):
    """The public hand case (scores=[2], kl=(0.5, −1 | pad), kl_coef 0.1): the score one past the last real
    token gives (−0.05, 0.1, 2) by hand; the padded probe's rows in known_mistakes.json confirm the name."""
    import importlib

    module = importlib.import_module("ppo_course.public_tests.test_ex6_kl_reward")
    with pytest.raises(Mismatch) as caught:
        module.test_shaped_rewards_hand_case(types.SimpleNamespace(kl_shaped_rewards=student_fn))
    assert caught.value.diagnosis == named
