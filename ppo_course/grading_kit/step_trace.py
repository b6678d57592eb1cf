"""Exercise 7's harness result, validated before any trusted code reads it.

The child's harness (``ppo_course.sandbox.harness.run_ppo_step``) returns
``{"state_dict", "stats", "kl_coef", "trace"}``; the trace is the observer's
event list (``ppo_course.sandbox.observe``, one row per event kind in its
docstring). All of it is data from the untrusted child: a list where a dict
belongs, a string where a tensor belongs, a tensor that still asks for a
gradient, ten thousand events. This module is the one gate: every event is
validated against a pydantic model of its kind (strict types, no extra
fields), and the diagnosis code (``grader.mistakes.ppo_step_diagnosis``, the public test of
exercise 7 and its stage checks, ``step_checks``) only ever reads
the validated copy.

A trace that fails validation anywhere is dropped as a whole (``None``): the
diagnosis then says less (``wrong_value`` or a stage named from the parent's
own comparisons), never something wrong, and never ``grader_error``. The
hidden tests' points never depend on the trace (they come from the parent's
comparisons of parameters and stats with the reference); the public test's
stage checks (``step_checks``) do read it, so a child that forges its trace
can at most keep that public test's points, which the hidden parity tests do
not give.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import torch
from pydantic import BaseModel, ConfigDict, PlainValidator, StrictBool, StrictStr, ValidationError

from ppo_course.grading_kit import compare
from ppo_course.sandbox.observe import MAX_EVENTS


def _tensor(value: Any) -> torch.Tensor:
    """A plain CPU tensor without autograd history (the observer stores detached copies)."""
    if type(value) is not torch.Tensor:  # a subclass could override its methods
        raise ValueError("expected a torch.Tensor")
    if value.requires_grad or value.device.type != "cpu" or value.is_sparse:
        raise ValueError("expected a dense, detached CPU tensor")
    return value


def _number(value: Any) -> float:
    """A finite-or-not Python float (ints accepted; bools and everything else refused)."""
    if type(value) not in (int, float) or compare.number_of(value) is None:
        raise ValueError("expected a Python number (an int within the float range)")
    return float(value)


Tensor = Annotated[torch.Tensor, PlainValidator(_tensor)]
Number = Annotated[float, PlainValidator(_number)]


class _Event(BaseModel):
    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, frozen=True)


class Generate(_Event):
    ev: Literal["generate"]
    temperature: Number | None
    top_p: Number | None
    max_new_tokens: Number | None
    given_generator: StrictBool
    responses: Tensor | None
    mask: Tensor | None


class Reward(_Event):
    ev: Literal["reward"]
    same_responses: StrictBool
    scores: Tensor | None


class Forward(_Event):
    ev: Literal["forward"]
    who: StrictStr
    temperature: Number | None
    grad: StrictBool
    rows: Number | None
    logp: Tensor | None = None  # deep mode only
    values: Tensor | None = None


class KLRewards(_Event):
    ev: Literal["kl_rewards"]
    kl_coef: Number | None
    placement: StrictStr
    logp: Tensor | None
    ref_logp: Tensor | None
    out: Tensor | None


class Whiten(_Event):
    ev: Literal["whiten"]
    shift_mean: StrictBool
    out: Tensor | None


class GAE(_Event):
    ev: Literal["gae"]
    gamma: Number | None
    lam: Number | None
    rewards: Tensor | None
    values: Tensor | None
    advantages: Tensor | None
    returns: Tensor | None


class Add(_Event):
    ev: Literal["add"]
    fields: dict[StrictStr, Tensor]


class Minibatches(_Event):
    ev: Literal["minibatches"]
    size: Number | None
    given_generator: StrictBool


class Loss(_Event):
    ev: Literal["loss"]
    rows: Number | None
    old_is_new: StrictBool
    clip_eps: Number | None
    clip_range_value: Number | None
    vf_coef: Number | None
    ent_coef: Number | None
    loss: Number | None


class Step(_Event):
    ev: Literal["step"]
    grad_norm: Number
    moved: StrictBool | None = None  # deep mode only


class Backward(_Event):
    ev: Literal["backward"]
    value: Number | None


class Clip(_Event):
    ev: Literal["clip"]
    max_norm: Number | None
    total_norm: Number | None


class End(_Event):
    ev: Literal["end"]
    moved: StrictBool


class KLUpdate(_Event):
    ev: Literal["kl_update"]
    current: Number | None
    n_steps: Number | None
    value_before: Number | None


class Bare(_Event):
    ev: Literal["zero_grad", "purge"]


EVENT_MODELS: dict[str, type[_Event]] = {
    "generate": Generate, "reward": Reward, "forward": Forward, "kl_rewards": KLRewards, "whiten": Whiten,
    "gae": GAE, "add": Add, "minibatches": Minibatches, "loss": Loss, "step": Step, "kl_update": KLUpdate,
    "zero_grad": Bare, "purge": Bare, "clip": Clip, "end": End, "backward": Backward,
}


def validate_trace(raw: Any) -> list[dict] | None:
    """The trace as a list of plain dicts whose fields have the types of ``EVENT_MODELS``, or None.

    Args:
        raw: whatever the child returned under ``"trace"``.

    Returns:
        None when ``raw`` is not a list of at most ``MAX_EVENTS`` events that all validate
        (one bad event drops the whole trace: a partly forged trace is not evidence).
        Never raises.
    """
    if type(raw) is not list or len(raw) > MAX_EVENTS:
        return None
    out: list[dict] = []
    for item in raw:
        if type(item) is not dict:
            return None
        model = EVENT_MODELS.get(item.get("ev")) if type(item.get("ev")) is str else None
        if model is None:
            return None
        try:
            event = model.model_validate(item)
        except (ValidationError, ValueError, TypeError):
            return None
        row = {name: getattr(event, name) for name in type(event).model_fields}
        if "fields" in row:
            row["fields"] = dict(row["fields"])
        out.append(row)
    return out


_STAT_TYPES = (float, int, bool, str, type(None))


def _clean_stats(stats: Any) -> dict | None:
    """str-keyed plain values of a stats dict (a tensor value is kept: the tests report its type), else None."""
    if type(stats) is not dict:
        return None
    out: dict[str, Any] = {}
    for key, value in stats.items():
        if type(key) is not str:
            continue
        if type(value) in _STAT_TYPES:
            out[key] = value
        elif type(value) is torch.Tensor:
            out[key] = value.detach()
        else:
            out[key] = _Opaque(type(value).__name__)
    return out


class _Opaque:
    """Stands for a stats value of another type (its type name is all the tests report)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<{self.name}>"


def validate_result(raw: Any) -> dict | None:
    """The harness result with every part validated, or None when it has no parameters dict.

    Returns:
        ``{"state_dict": {str: Tensor}, "stats": dict | None, "kl_coef": float | None,
        "trace": list[dict] | None, "ref_state_dict": {str: Tensor} | None}``: a non-tensor parameter or a
        non-str name makes the whole result None (the caller says ``wrong_type``); a bad ``stats`` becomes
        None, a bad ``kl_coef`` None, a bad trace None, a bad or missing ``ref_state_dict`` (the reference
        policy's weights after the step) None. Never raises.
    """
    if type(raw) is not dict:
        return None
    state = _clean_state(raw.get("state_dict"))
    if state is None:
        return None
    coef = raw.get("kl_coef")
    return {"state_dict": state, "stats": _clean_stats(raw.get("stats")),
            "kl_coef": compare.number_of(coef) if type(coef) in (int, float, torch.Tensor) else None,
            "trace": validate_trace(raw.get("trace")), "ref_state_dict": _clean_state(raw.get("ref_state_dict"))}


def _clean_state(raw: Any) -> dict[str, torch.Tensor] | None:
    """A {str: Tensor} parameters dict, detached, or None when it is anything else. Never raises."""
    if type(raw) is not dict:
        return None
    state: dict[str, torch.Tensor] = {}
    for name, value in raw.items():
        if type(name) is not str or type(value) is not torch.Tensor:
            return None
        state[name] = value.detach()
    return state
