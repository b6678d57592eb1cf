"""The stage where a student's PPO step first departs from the reference.

The last resort of exercise 7's diagnosis, after the named mistakes
(``grader.mistakes.ppo_step_diagnosis``) and the known buggy steps
(``grader.mistakes.buggy_ppo_step``) found nothing: walk the stub's stages in order
(Book fig. 5.1: rollout → scores → KL → shaped rewards → GAE → whitening →
per-epoch losses → weights) and name the first whose intermediate quantity in
the student's validated trace (``ppo_course.grading_kit.step_trace``) differs from the
reference's on the same payload. That names *where* to look even when the
exact mistake is not catalogued.

A stage the student's trace does not show (a step that bypassed the observed
functions, or a trace dropped by validation) stops the walk: nothing is
claimed about it or anything after it.
"""

from __future__ import annotations

from typing import Any

import torch

from grader.mistakes.ppo_step_diagnosis import ATOL, RTOL
from ppo_course.grading_kit.compare import all_finite, close

#: Stage order and diagnosis id (keys of grader.mistakes.diagnose.DIAGNOSES).
STAGES: tuple[tuple[str, str], ...] = (
    ("rollout", "ppo_step_stage_rollout"),
    ("scores", "ppo_step_stage_scores"),
    ("kl", "ppo_step_stage_kl"),
    ("rewards", "ppo_step_stage_rewards"),
    ("gae", "ppo_step_stage_gae"),
    ("whitening", "ppo_step_stage_whitening"),
    # the value head's targets as stored: a departure here is one mistake (returns other than compute_gae's)
    ("returns", "ppo_step_returns_wrong"),
    ("losses", "ppo_step_stage_losses"),
    ("weights", "ppo_step_stage_weights"),
)
_UNSEEN = object()


def _first(trace: list[dict], ev: str) -> dict | None:
    return next((e for e in trace if e.get("ev") == ev), None)


def _same(a: Any, b: Any, mask: torch.Tensor | None = None) -> bool:
    """Tensors of one shape within atol + rtol·|b| on the mask's positions (when it fits), through
    ``ppo_course.grading_kit.compare.close``; a NaN or ±inf on either side differs."""
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
        return False
    compared = b[mask.bool()] if mask is not None and mask.shape == b.shape else b
    return (all_finite(compared)  # close() would call a NaN in b a grader bug: here b may be the student's
            and close(a, b, rtol=RTOL, atol=ATOL, mask=mask))


def _stage_values(trace: list[dict]) -> dict[str, Any]:
    """{stage: the quantity compared}, ``_UNSEEN`` where the trace does not show it."""
    gen, reward, kr = _first(trace, "generate"), _first(trace, "reward"), _first(trace, "kl_rewards")
    gae, add = _first(trace, "gae"), _first(trace, "add")
    fields = add.get("fields", {}) if add else {}
    losses = [e.get("loss") for e in trace if e.get("ev") == "loss"]
    return {
        "rollout": gen.get("responses") if gen else _UNSEEN,
        "scores": reward.get("scores") if reward else _UNSEEN,
        "kl": (kr.get("logp"), kr.get("ref_logp")) if kr else _UNSEEN,
        "rewards": gae.get("rewards") if gae else _UNSEEN,
        "gae": (gae.get("advantages"), gae.get("returns")) if gae else _UNSEEN,
        "whitening": fields.get("advantages", _UNSEEN) if add else _UNSEEN,
        "returns": fields.get("returns", _UNSEEN) if add else _UNSEEN,
        "losses": losses if losses and all(isinstance(x, float) for x in losses) else _UNSEEN,
    }


def _stage_same(stage: str, got: Any, want: Any, mask: torch.Tensor | None) -> bool:
    if stage in ("kl", "gae"):
        return all(_same(g, w, mask) for g, w in zip(got, want))
    if stage == "losses":
        return len(got) == len(want) and all(abs(g - w) <= ATOL + RTOL * abs(w) for g, w in zip(got, want))
    if stage in ("rollout", "scores"):
        return _same(got, want)
    return _same(got, want, mask)


def first_departing_stage(got: dict, want: dict) -> str | None:
    """The diagnosis id of the first stage where ``got``'s trace differs from ``want``'s, or None.

    Args:
        got: the student's validated harness result (``ppo_step_trace.validate_result``).
        want: the reference's (``buggy_ppo_step.run_reference_step``, no switch).

    Returns:
        ``ppo_step_stage_<stage>``; ``ppo_step_stage_weights`` when every observed stage up to the
        losses matches (the updates themselves differ); None when the student's trace is missing
        or stops showing a stage before any difference. Never raises.
    """
    try:
        g, w = got.get("trace"), want.get("trace")
        if not g or not w:
            return None
        mine, ref = _stage_values(g), _stage_values(w)
        add = _first(w, "add")
        mask = add["fields"].get("mask") if add else None
        for stage, diagnosis in STAGES[:-1]:
            if ref[stage] is _UNSEEN:
                continue
            if mine[stage] is _UNSEEN:
                return None
            if not _stage_same(stage, mine[stage], ref[stage], mask):
                return diagnosis
        return STAGES[-1][1]
    except Exception:  # noqa: BLE001 - a diagnosis never fails a grading run; say less instead
        return None


def gradient_norms(trace: list[dict] | None) -> list[float] | None:
    """The gradient's total 2-norm before each optimizer step, in order, from a deep-mode trace.

    Before clipping: the ``clip`` event's ``total_norm`` where the step called
    ``torch.nn.utils.clip_grad_norm_`` right before ``optimizer.step()``, else the ``step`` event's
    ``grad_norm`` (nothing clipped it). None when the trace is missing or a norm is not a number.
    """
    if not trace:
        return None
    out: list[float] = []
    pending = None
    for event in trace:
        if event.get("ev") == "clip":
            pending = event.get("total_norm")
        elif event.get("ev") == "step":
            norm = pending if pending is not None else event.get("grad_norm")
            if not isinstance(norm, float):
                return None
            out.append(norm)
            pending = None
    return out


def same_gradients(got: dict, want: dict) -> bool:
    """True when two deep-mode runs of one step took as many optimizer steps with the same gradient norms
    before clipping (within ``RTOL``/``ATOL``, NaN never equal). Never raises.

    Used by exercise 7's own-pieces report: two runs of the same step on the same payload whose stages
    (rollout ... losses) agree and whose gradients agree differ in their parameters only by rounding,
    which Adam's per-coordinate normalisation (Book §5.5's optimizer) can amplify to ~lr on a coordinate
    whose gradient is about 0 (measured: 2.5e-5 after 4 steps of lr 3e-4 with the solution's ex1-ex6 against
    the reference's, on a step that zeroes the gradient every mini-batch).
    """
    try:
        g, w = gradient_norms(got.get("trace")), gradient_norms(want.get("trace"))
        if g is None or w is None or len(g) != len(w) or not w:
            return False
        return all(abs(a - b) <= ATOL + RTOL * abs(b) for a, b in zip(g, w))
    except Exception:  # noqa: BLE001 - unreadable data: not the same
        return False
