"""A step that changes the reference policy is named `ppo_step_reference_updated`, read from the weights alone.

The harness returns the reference policy's weights after the student's step (`ref_state_dict`); the payload holds
the ones it was given. Bit-for-bit equal: frozen. Hand-made dicts: no step runs here.
"""

from __future__ import annotations

import torch

from grader.hidden import ex7_support
from grader.hidden import test_ex7_ppo_step as hidden

GIVEN = {"w": torch.tensor([1.0, 2.0], dtype=torch.float64), "b": torch.tensor([0.5], dtype=torch.float64)}


def _payload():
    return {"state_dict": {k: v + 1 for k, v in GIVEN.items()}, "ref_state_dict": GIVEN, "ppo_config": {}}


def test_a_changed_reference_is_seen_and_named_before_any_trace_is_read():
    changed = {"w": torch.tensor([1.0, 2.0 + 2**-40], dtype=torch.float64), "b": GIVEN["b"].clone()}
    got = {"state_dict": {}, "ref_state_dict": changed}  # no trace at all: the name needs none
    assert ex7_support.reference_policy_changed(_payload(), got)
    assert hidden.diagnose_step(got, _payload(), reference_trace={}) == "ppo_step_reference_updated"


def test_a_frozen_reference_or_none_returned_is_not_a_change():
    frozen = {"ref_state_dict": {k: v.clone() for k, v in GIVEN.items()}}
    assert not ex7_support.reference_policy_changed(_payload(), frozen)
    assert not ex7_support.reference_policy_changed(_payload(), {})
    # Without a separate reference in the payload, the policy's own starting weights are the reference's.
    assert ex7_support.reference_policy_changed({"state_dict": GIVEN}, {"ref_state_dict": {"w": GIVEN["w"] * 2,
                                                                                          "b": GIVEN["b"]}})
