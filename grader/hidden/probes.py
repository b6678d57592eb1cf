"""Verdicts of the measurements that must run in the child, judged here from the raw data it returned.

Exercise 5's "stores detached copies" needs an autograd graph where the
student's buffer runs, so the child runs a probe (``ppo_course.sandbox.harness``,
captured before the student's import and called by the worker from that
capture, never through a module attribute). The probe returns raw data only:
per mini-batch and field, a detached copy of the tensor that came back and
three facts read through ``torch._C.TensorBase``'s descriptors. This module
draws the probe's plan from the grader's secret (``grader.hidden.draws``) and
decides the verdict in the trusted process: the reply is validated against a
schema (pydantic), the rows that came back must be rows of the drawn input
(recomputed here), and only then are the graph facts read.

The child is the student's process: a submission can reach the probe there (its
closure cells through ``gc``) or recognise it as its caller, so the verdict is
feedback only and earns no point (``grader/points.yaml``: ``test_buffer_stores_detached``
is informational; no point rests on a measurement made where student code ran).
"""

from __future__ import annotations

from typing import Annotated, Any, Optional

import torch
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr, ValidationError, model_validator

from grader.hidden.draws import draw_int
from ppo_course.grading_kit.feedback import Mismatch

WHAT = "a field added with a grad_fn, read back through minibatches()"


class _Field(BaseModel):
    """One field of one mini-batch as the probe reported it."""

    model_config = ConfigDict(arbitrary_types_allowed=True, strict=True, frozen=True)

    name: Annotated[StrictStr, Field(max_length=200)]
    tensor: Optional[torch.Tensor]
    requires_grad: StrictBool
    has_grad_fn: StrictBool
    plain: StrictBool

    @model_validator(mode="before")
    @classmethod
    def _from_list(cls, value: Any) -> Any:
        """The child sends ``[name, tensor, requires_grad, has_grad_fn, plain]``; anything else is refused."""
        if isinstance(value, (list, tuple)) and len(value) == 5:
            return dict(zip(("name", "tensor", "requires_grad", "has_grad_fn", "plain"), value))
        raise ValueError("a field is [name, tensor, requires_grad, has_grad_fn, plain]")


class _Reply(BaseModel):
    """The probe's whole reply: per mini-batch a list of fields, or None for a mini-batch that is not a dict."""

    model_config = ConfigDict(arbitrary_types_allowed=True, strict=True, frozen=True)

    batches: Annotated[list[Optional[Annotated[list[_Field], Field(max_length=64)]]], Field(max_length=4096)]


def buffer_graph_plan() -> dict[str, Any]:
    """The probe's inputs, drawn from the grader's secret and ``grader_version`` (never fixed in the source).

    Returns:
        ``{"rows": 3..9, "cols": 2..5, "seed": int, "scale": float in [1.5, 4], "mbs": 1..rows, "mb_seed": int}``.
    """
    rows = draw_int("ex5.buffer_graph.rows", 3, 9)
    return {"rows": rows, "cols": draw_int("ex5.buffer_graph.cols", 2, 5),
            "seed": draw_int("ex5.buffer_graph.seed", 0, 2**31 - 1),
            "scale": 1.5 + draw_int("ex5.buffer_graph.scale", 0, 250) / 100.0,
            "mbs": draw_int("ex5.buffer_graph.mbs", 1, rows), "mb_seed": draw_int("ex5.buffer_graph.mb_seed", 0, 2**31 - 1)}


def expected_rows(plan: dict[str, Any]) -> torch.Tensor:
    """The ``values`` the probe adds, recomputed here: ``rand(rows, cols, seed) · scale`` (float64)."""
    g = torch.Generator().manual_seed(int(plan["seed"]))
    leaf = torch.rand(int(plan["rows"]), int(plan["cols"]), generator=g, dtype=torch.float64)
    return torch.mul(leaf, float(plan["scale"]))


def _parse(raw: Any) -> _Reply:
    try:
        return _Reply.model_validate(raw)
    except ValidationError:
        raise Mismatch("wrong_type", "mini-batches must be dicts {field: tensor}", "minibatches() after add()") from None


def judge_buffer_graph(plan: dict[str, Any], raw: Any) -> None:
    """Raise a Mismatch unless ``raw`` shows the drawn rows coming back without their autograd graph.

    Args:
        plan: the plan sent to the child (``buffer_graph_plan``).
        raw: the child's reply (``harness.buffer_graph_probe``), untrusted.

    Raises:
        Mismatch: ``wrong_type`` (not dicts of the two added tensor fields, or rows that are not the added
        ones), ``buffer_keeps_graph`` (a field still requires grad or carries a ``grad_fn``).
    """
    reply = _parse(raw)
    rows, want = int(plan["rows"]), expected_rows(plan)
    seen = 0
    for batch in reply.batches:
        if batch is None or {f.name for f in batch} != {"ids", "values"} or len(batch) != 2:
            raise Mismatch("wrong_type", "mini-batches must be dicts {field: tensor}", "minibatches() after add()")
        for f in batch:
            if f.tensor is None or not f.plain:
                raise Mismatch("wrong_type", "mini-batch fields must be tensors", "minibatches() after add()")
        fields = {f.name: f.tensor for f in batch}
        ids, values = fields["ids"], fields["values"]
        ok = ids.dtype == torch.long and ids.dim() == 1 and values.dtype == torch.float64 \
            and tuple(values.shape) == (ids.shape[0], want.shape[1]) and ids.numel() > 0 \
            and bool(((ids >= 0) & (ids < rows)).all())
        # Every row that came back is one of the drawn rows (a subset: dropped or unpaired rows are other
        # tests' mistakes); a reply made up without the drawn input fails here.
        if not ok or not all(bool((want == row).all(dim=1).any()) for row in values):
            raise Mismatch("wrong_type", "the mini-batches do not hold the rows that were added",
                           "minibatches() after add()")
        seen += ids.shape[0]
    if seen == 0:
        raise Mismatch("wrong_type", "no mini-batch came back", "minibatches() after add()")
    if any(f.requires_grad or f.has_grad_fn for batch in reply.batches for f in batch or ()):
        raise Mismatch("buffer_keeps_graph", "", WHAT)
