"""Exercise 7's purge point with a purged decoy beside an unpurged training buffer (red team attack8, a05).

The step trained on a buffer whose advantages field it named ``adv`` (so that buffer did not read as the
step's rollout) and never purged it, and beside it filled a second buffer with the rollout under the usual
names, started its training and purged it. The purge test counted only buffers that held the rollout, so it
saw the purged copy alone: 13 / 16 against 12 / 16 for the twin without the copy (fast profile, exercise 7,
before the fix). `grader.hidden.ex7_support.purge_diagnosis` now asks every buffer the step created to end
purged. Fast: the verdict on hand-made TrackingBuffers, no child process.
"""

from __future__ import annotations

import pytest
import torch

from grader.hidden.ex7_support import Tracking, purge_diagnosis

pytestmark = pytest.mark.xdist_group("hostile")


def _rollout() -> dict:
    """A reference trace of 2 sequences × 3 tokens: the `add` event's fields, by hand."""
    fields = {"responses": torch.tensor([[3, 1, 4], [1, 5, 9]]),
              "mask": torch.tensor([[1, 1, 1], [1, 1, 0]], dtype=torch.bool),
              "logp_old": torch.tensor([[-1.0, -2.0, -0.5], [-0.25, -3.0, -1.5]]),
              "advantages": torch.tensor([[0.5, -0.5, 1.0], [-1.0, 0.25, 0.0]])}
    return {"trace": [{"ev": "add", "fields": fields}]}


def _fields(rollout: dict, advantages_name: str = "advantages") -> dict:
    f = rollout["trace"][0]["fields"]
    return {"responses": f["responses"], "mask": f["mask"], "logp_old": f["logp_old"], advantages_name: f["advantages"]}


def _buffer(tracking: Tracking, fields: dict, *, purge: bool):
    buf = tracking.known_good.table["ex5_rollout_buffer"]["RolloutBuffer"]()
    buf.add(**fields)
    buf.start_training()
    if purge:
        buf.purge()
    return buf


def test_honest_step_passes():
    """One buffer: the rollout, trained, purged: no verdict (the check can pass)."""
    tracking, rollout = Tracking(), _rollout()
    _buffer(tracking, _fields(rollout), purge=True)
    assert purge_diagnosis(tracking.created, rollout) is None


def test_purged_decoy_beside_unpurged_training_buffer_fails():
    """a05: training buffer under another field name, never purged; a purged copy of the rollout beside it."""
    tracking, rollout = Tracking(), _rollout()
    _buffer(tracking, _fields(rollout, "adv"), purge=False)  # trained on, kept
    _buffer(tracking, _fields(rollout), purge=True)  # the decoy
    assert purge_diagnosis(tracking.created, rollout) == ("ppo_step_no_purge", "")


def test_unpurged_rollout_buffer_fails():
    """The plain mistake (no purge) keeps its diagnosis."""
    tracking, rollout = Tracking(), _rollout()
    _buffer(tracking, _fields(rollout), purge=False)
    assert purge_diagnosis(tracking.created, rollout) == ("ppo_step_no_purge", "")


def test_no_buffer_with_the_rollout_fails():
    """A purged buffer that never held the rollout (advantages under another name only) earns nothing."""
    tracking, rollout = Tracking(), _rollout()
    _buffer(tracking, _fields(rollout, "adv"), purge=True)
    diagnosis, detail = purge_diagnosis(tracking.created, rollout)
    assert diagnosis == "wrong_value" and "rollout" in detail
