"""Red-team round 9: what a hidden test's feedback may say about a scalar the submission returned.

A hidden test shows its failed comparisons' "where they differ" sentence (`ppo_course.grading_kit.where`,
through `Mismatch.finding`). For a 0-dim output that sentence used to print got/expected to four significant
digits. A submission choosing got chooses what that number says:

* got = 1 prints 1/expected: the reference's loss on a hidden input (a hidden answer);
* got = the right loss × x prints x: anything the submission read from a hidden input (a covert channel
  out of the sandbox into the student's own feedback; /work/attack9/a1b_ratio_exfil printed
  10 + |logp_old[0, 0]| of every hidden call, −1000 on the finite-at-−1000 test).

The rule tested here: for a scalar, what hidden feedback says does not depend on the value the student
returned (beyond finite / not finite) nor on the expected value.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch

from ppo_course.grading_kit.where import where_they_differ

_SOLUTION_EX2 = Path(__file__).resolve().parents[2] / "solutions" / "ex2_clipped_loss.py"


@pytest.mark.parametrize("got, want", [(1.0, 0.147), (1.0, -3.3), (2.5, 2.0), (1.0, 0.0), (-7.0, 1e-9)])
def test_scalar_finding_names_no_number(got, want):
    """The sentence for two scalars that differ is one fixed text, whatever got and expected are
    (before: "got/expected = 6.803", i.e. expected = 1/6.803 to a submission returning 1)."""
    s = where_they_differ(torch.tensor(got, dtype=torch.float64), torch.tensor(want, dtype=torch.float64),
                          rtol=1e-9, atol=1e-12)
    assert s == "the value differs."


def test_scalar_finding_non_finite_is_said():
    """A NaN or inf scalar is still named as such (a property of got alone, no expected value)."""
    for bad in (float("nan"), float("inf")):
        s = where_they_differ(torch.tensor(bad), torch.tensor(0.5), rtol=1e-6, atol=1e-6)
        assert s == "the value differs: got a non-finite value."


def _scaled_submission(folder: Path, offset: float) -> Path:
    """ex2 from `solutions/`, whose loss is the right one times (offset + |logp_old[0, 0]|)."""
    folder.mkdir()
    src = _SOLUTION_EX2.read_text(encoding="utf-8").replace("def clipped_surrogate_loss(", "def _true_loss(")
    src += textwrap.dedent(f"""

        def clipped_surrogate_loss(logp_new, logp_old, advantages, mask, clip_eps=0.2):
            loss = _true_loss(logp_new, logp_old, advantages, mask, clip_eps)
            if logp_old.dim() == 2 and logp_old.numel():
                return loss * ({offset!r} + float(logp_old[0, 0].abs()))
            return loss
        """)
    (folder / "ex2_clipped_loss.py").write_text(src, encoding="utf-8")
    return folder


def test_hidden_feedback_carries_no_student_scalar(tmp_path):
    """Two submissions that differ only in the factor they multiply the right loss by get the same hidden
    feedback, word for word: nothing they chose (nor the hidden input they read it from) reaches it."""
    from grader.grade import grade_submission

    outputs = []
    for offset in (10.0, 20.0):
        result = grade_submission(_scaled_submission(tmp_path / f"s{int(offset)}", offset),
                                  exercises=["ex2_clipped_loss"], profile="fast")
        hidden = [t for t in result.tests if t.kind == "hidden"]
        assert any(t.status == "failed" for t in hidden)
        outputs.append([(t.name, t.output, t.finding) for t in hidden])
    assert outputs[0] == outputs[1]
    assert not any("got/expected" in out for _, out, _ in outputs[0])


# --------------------------------------------------------------------------- a student's value read as a number
# The tests read AdaptiveKLController.value with float(): None, a str, a list, a tensor of two elements or an int
# of 400 digits made float() raise inside the grader (TypeError, ValueError, RuntimeError, OverflowError), which
# the grader reports as its own failure (grader_error): the whole submission became a grader fault, no score
# published (/work/attack9/a3_float_fault, /work/attack9/a3b_value_none: an honest `self.value = None` did it).

@pytest.mark.parametrize("value", [None, "0.05", [0.05], torch.tensor([0.05, 0.06]), torch.tensor([]),
                                   torch.tensor(True), 10**400, True])
def test_not_a_number_is_a_wrong_type(value):
    """Each of these is the student's wrong type (a `Mismatch`, never another exception)."""
    from ppo_course.grading_kit.compare import close_scalar, number_of
    from ppo_course.grading_kit.feedback import Mismatch, expect_number

    assert number_of(value) is None
    with pytest.raises(Mismatch) as info:
        expect_number(value, "AdaptiveKLController.value")
    assert info.value.diagnosis == "wrong_type"
    assert close_scalar(value, 0.05, rtol=1e-9, atol=1e-12) is False


@pytest.mark.parametrize("value, want", [(0.05, 0.05), (3, 3.0), (torch.tensor(0.25), 0.25),
                                         (torch.tensor([[2]]), 2.0), (float("inf"), float("inf"))])
def test_a_number_is_read_as_one(value, want):
    """Ints, floats and one-element real tensors are numbers (as `float()` reads them)."""
    from ppo_course.grading_kit.feedback import expect_number

    assert expect_number(value, "x") == want


def test_grader_refuses_an_int_beyond_int64_from_a_child():
    """The parent's decoder takes a child's ints within int64 only (a 400-digit int is a malformed value, the
    student's crash); the child side decodes without the bound."""
    from sandbox_child import codec

    strict = codec.Decoder([], int_limit=codec.INT64_LIMIT)
    assert strict.decode([2**63 - 1, -(2**63)]) == [2**63 - 1, -(2**63)]
    for bad in (2**63, -(2**63) - 1, 10**400):
        with pytest.raises(codec.ProtocolError):
            strict.decode({"t": "dict", "v": {"value": bad}})
    assert codec.Decoder([]).decode(10**400) == 10**400


def test_controller_value_none_is_graded_not_a_fault(tmp_path):
    """A controller whose value is None (then a tensor of two elements after update) is graded: its controller
    tests fail as the student's (wrong_type), no test is a grader_error."""
    from grader.grade import grade_submission

    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / "ex6_kl_reward.py").write_text(textwrap.dedent("""
        import torch

        def per_token_kl(logp, ref_logp, mask):
            raise NotImplementedError

        def kl_shaped_rewards(scores, logp, ref_logp, mask, kl_coef=0.05, placement="last_token"):
            raise NotImplementedError

        class AdaptiveKLController:
            def __init__(self, init_kl_coef=0.05, target=6.0, horizon=10000):
                self.value = None

            def update(self, current_kl, n_steps):
                self.value = torch.tensor([1.0, 2.0])
                return self.value
        """), encoding="utf-8")
    result = grade_submission(folder, exercises=["ex6_kl_reward"], profile="fast")
    assert not [t.name for t in result.tests if t.diagnosis == "grader_error"]
    controller = [t for t in result.tests if "adaptive_kl" in t.test]
    assert controller and all(t.status == "failed" and t.diagnosis == "wrong_type" for t in controller)


# --------------------------------------------------------------------------- NaN row numbers in mini-batches
def test_drain_refuses_non_finite_row_numbers():
    """Mini-batch ids of NaN are the student's wrong type: the second-cycle test read them with int(), which
    raised ValueError inside the grader: a grader fault, no score (/work/attack9/a4_nan_ids)."""
    from ppo_course.grading_kit.buffer_data import drain
    from ppo_course.grading_kit.feedback import Mismatch

    for bad in (float("nan"), float("inf")):
        with pytest.raises(Mismatch) as info:
            drain([{"ids": torch.tensor([100.0, bad]), "values": torch.zeros(2, 3)}])
        assert info.value.diagnosis == "wrong_type"
    rows = drain([{"ids": torch.tensor([100.0, 101.0]), "values": torch.zeros(2, 3)}])  # finite floats still read
    assert rows[0]["ids"].tolist() == [100.0, 101.0]


def test_nan_ids_in_the_second_cycle_are_graded_not_a_fault(tmp_path):
    """The solution's buffer, but the second cycle's ids come back NaN: graded, its cycle test fails as the
    student's, no test is a grader_error."""
    from grader.grade import grade_submission

    folder = tmp_path / "sub"
    folder.mkdir()
    src = (_SOLUTION_EX2.parent / "ex5_rollout_buffer.py").read_text(encoding="utf-8")
    old = "                yield {name: tensor[idx.to(tensor.device)] for name, tensor in self._data.items()}"
    assert old in src
    src = src.replace(old, textwrap.indent(textwrap.dedent("""\
        mb = {name: tensor[idx.to(tensor.device)] for name, tensor in self._data.items()}
        if "ids" in mb and int(mb["ids"].min()) >= 100:
            mb["ids"] = torch.full(mb["ids"].shape, float("nan"), dtype=torch.float64)
        yield mb"""), " " * 16))
    (folder / "ex5_rollout_buffer.py").write_text(src, encoding="utf-8")
    result = grade_submission(folder, exercises=["ex5_rollout_buffer"], profile="fast")
    assert not [t.name for t in result.tests if t.diagnosis == "grader_error"]
    cycle = [t for t in result.tests if t.kind == "hidden" and t.test == "test_cycle_rules"]
    assert cycle and cycle[0].status == "failed" and cycle[0].diagnosis == "wrong_type"


# --------------------------------------------------------------------------- a forged shared-leaf gradient
_FORGE_TIED = '''

def _forge():
    import gc

    def fake(fn, args, kwargs, tie):
        return {"output": None, "grads": {"theta": torch.zeros(1, dtype=torch.float64)}}

    for obj in gc.get_objects():
        if type(obj) is dict and "tied_grad" in obj and "call_with_grad" in obj:
            obj["tied_grad"] = fake


_forge()
'''


def test_forged_tied_gradient_is_the_students(tmp_path):
    """The child is the student's process: its worker's captured `tied_grad` can be swapped (through gc) for one
    whose reply is a gradient of another shape than θ. That reply is the student's crash, never a grader_error
    (which made the whole submission a grader fault: /work/attack9/a6_tied_shape)."""
    from grader.grade import grade_submission

    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / "ex2_clipped_loss.py").write_text(_SOLUTION_EX2.read_text(encoding="utf-8") + _FORGE_TIED,
                                                encoding="utf-8")
    result = grade_submission(folder, exercises=["ex2_clipped_loss"], profile="fast")
    assert not [t.name for t in result.tests if t.diagnosis == "grader_error"]
    tied = [t for t in result.tests if t.test == "test_surrogate_no_gradient_into_constants"]
    assert tied and tied[0].status == "failed" and tied[0].diagnosis == "crash"


# --------------------------------------------------------------------------- no copy of a value of another shape
def test_a_value_of_another_shape_is_never_copied():
    """A child's reply of another shape is refused before the grader copies it to float64 (8x a uint8 reply,
    once per candidate mistake: a 64 MiB reply took the grading process from 313 to 1230 MB of peak RSS,
    /work/attack9/a7_parent_blowup). A 1 TiB meta tensor (no storage) cannot be copied: comparing it with a
    small expected value must answer without trying."""
    from ppo_course.grading_kit import compare

    huge = torch.empty(2**40, dtype=torch.uint8, device="meta")
    want = torch.zeros(2, 3, dtype=torch.float64)
    assert compare.close(huge, want, rtol=1e-6, atol=1e-6) is False
    assert compare.same_values(huge, want, rtol=1e-6, atol=1e-6) is False
    assert compare.max_abs_diff(huge, want) == float("inf")
    assert compare.describe_difference(huge, want) == "got a value of another shape or type"
    assert compare.same_values(7, torch.tensor(7.0), rtol=0, atol=0) is True  # a number still compares
