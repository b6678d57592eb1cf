"""A call that raises with one mask dtype and returns with another is named `mask_dtype_unsupported` (issue 21, 12).

Both providers (the hidden grader's `GuardedModule`, `ppo-course check`'s `LocalModule`)
repeat a call that raised with the mask in the other dtypes (`ppo_course.grading_kit.mask_dtype`);
the test still fails (a `Mismatch`), only the name changes. The student functions below are
hand-written: `1 - mask` raises RuntimeError for a bool mask only (torch refuses `-` on bool),
`torch.where(mask, ...)` raises for int and float masks, and a function that raises for every
dtype keeps its own exception. The end-to-end check is the catalogue's
(`tests/catalogue/test_catalogue.py::test_every_failing_test_names_the_mistake`, entries
`ex2_clipped_loss__int_mask_as_index`, `ex4_gae__bool_mask_arithmetic`, `ex6_kl_reward__where_needs_bool_mask`).
"""

from __future__ import annotations

import types

import pytest
import torch

from grader.hidden.provider import GuardedModule, SandboxProvider
from grader.sandbox import Limits, StudentError, StudentTimeout
from ppo_course.check_support.local import LocalModule, LocalProvider
from ppo_course.grading_kit.feedback import Mismatch
from ppo_course.grading_kit.mask_dtype import other_mask_calls

MASK = torch.tensor([[1, 1, 0], [1, 0, 0]])
X = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=torch.float64)


def _student_module() -> types.ModuleType:
    mod = types.ModuleType("student_ex4")

    def compute_gae(rewards, values, mask, gamma=1.0, lam=0.95):
        keep = (1 - (1 - mask)).to(rewards.dtype)  # RuntimeError for a bool mask
        return rewards * keep, values * keep

    def per_token_kl(logp, ref_logp, mask):
        return torch.where(mask, logp - ref_logp, torch.zeros_like(logp))  # RuntimeError unless bool

    def whiten(x, mask, shift_mean=True):
        raise RuntimeError("broken for every mask")

    mod.compute_gae, mod.per_token_kl, mod.whiten = compute_gae, per_token_kl, whiten
    return mod


def test_other_mask_calls_swap_the_mask_positionally_and_by_keyword():
    calls = other_mask_calls("compute_gae", (X, X, MASK.bool()), {})
    assert [dtype for _, _, dtype in calls] == [torch.int64, torch.float64]
    assert calls[1][0][2].dtype == torch.float64 and torch.equal(calls[1][0][2], MASK.double())
    by_kw = other_mask_calls("compute_gae", (X, X), {"mask": MASK.double(), "gamma": 0.9})
    assert [k["mask"].dtype for _, k, _ in by_kw] == [torch.bool, torch.int64] and by_kw[0][1]["gamma"] == 0.9
    # No mask parameter, a mask that is not 0/1, no mask passed: nothing to retry.
    assert other_mask_calls("probability_ratio", (X, X), {}) == []
    assert other_mask_calls("compute_gae", (X, X, MASK * 2), {}) == []
    assert other_mask_calls("compute_gae", (X, X), {}) == []


@pytest.mark.parametrize("name, mask, names_it", [
    ("compute_gae", MASK.bool(), True),      # 1 - bool raises; the int mask returns
    ("compute_gae", MASK.double(), False),   # returns: nothing to name
    ("per_token_kl", MASK, True),            # torch.where on int raises; the bool mask returns
    ("whiten", MASK.bool(), False),          # raises with every dtype: its own exception stays
])
def test_local_module_names_the_mask_dtype(name, mask, names_it):
    student = LocalModule(_student_module())
    args = (X, mask) if name == "whiten" else (X, X, mask)
    if names_it:
        with pytest.raises(Mismatch) as caught:
            getattr(student, name)(*args)
        assert caught.value.diagnosis == "mask_dtype_unsupported"
        assert "returned with the same mask as" in caught.value.detail
        # The gradient and in-place paths name it the same way.
        with pytest.raises(Mismatch, match="mask_dtype_unsupported"):
            student.call_with_grad(name, args, {}, wrt=("logp" if name == "per_token_kl" else "rewards",),
                                   grad_output=torch.ones_like(X))
        with pytest.raises(Mismatch, match="mask_dtype_unsupported"):
            student.modified_inputs(name, args, {})
    elif name == "whiten":
        with pytest.raises(RuntimeError, match="broken for every mask") as caught:
            getattr(student, name)(*args)
        assert LocalProvider.classify(caught.value)[0] == "raises_error"
    else:
        getattr(student, name)(*args)


class _FakeRemote:
    """A `RemoteModule` stand-in: runs the hand-written module, reports its errors as the sandbox does."""

    name = "ex4_gae"

    def __init__(self):
        self.module = _student_module()
        self.calls: list[torch.dtype] = []

    def call(self, name, args=(), kwargs=None, timeout=None):
        mask = args[-1] if args else kwargs["mask"]
        self.calls.append(mask.dtype)
        try:
            return getattr(self.module, name)(*args, **(kwargs or {}))
        except Exception as exc:  # the child's report: type name and message
            raise StudentError(type(exc).__name__, str(exc)) from None


def test_guarded_module_names_the_mask_dtype_through_the_sandbox_proxy():
    remote = _FakeRemote()
    student = GuardedModule(remote, {}, Limits())
    with pytest.raises(Mismatch) as caught:
        student.compute_gae(X, X, MASK.bool())
    assert caught.value.diagnosis == "mask_dtype_unsupported"
    assert "raised RuntimeError with a bool mask" in caught.value.detail
    # The repeated call went to the (sandboxed) remote, never to code in this process: bool, then int.
    assert remote.calls == [torch.bool, torch.int64]
    remote.calls.clear()
    with pytest.raises(StudentError) as still:
        student.whiten(X, MASK.bool())
    assert SandboxProvider.classify(still.value)[0] == "raises_error"
    assert remote.calls == [torch.bool, torch.int64, torch.float64]


class _HangingRemote(_FakeRemote):
    """Every call times out, as the sandbox reports a call stopped at its wall-clock deadline."""

    def call(self, name, args=(), kwargs=None, timeout=None):
        self.calls.append(name)
        raise StudentTimeout("deadline")

    def ppo_step_harness(self, *args, **kwargs):
        self.calls.append("ppo_step")
        raise StudentTimeout("deadline")


@pytest.mark.parametrize("method", ["call", "ppo_step_harness"])
def test_a_hung_function_is_still_not_called_again(method):
    """The time-out rule of `GuardedModule` holds beside the mask's retry: no retry of a hung call, and the
    function is not run again (its next call fails at once with the same sentence)."""
    remote = _HangingRemote()
    student = GuardedModule(remote, {}, Limits())
    call = (lambda: student.compute_gae(X, X, MASK.bool())) if method == "call" else \
        (lambda: student.ppo_step_harness({}, {}, X, {}, 0))
    for _ in range(2):
        with pytest.raises(StudentTimeout, match="did not return within"):
            call()
    assert len(remote.calls) == 1
