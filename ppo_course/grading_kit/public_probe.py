"""The public tests' probe step: a known mistake is named only when a second, rich input confirms it.

A public test compares the student's output on a small fixed input with the known mistakes' outputs
there (`ppo_course.grading_kit.known_mistakes`); a small input often cannot tell two mistakes apart,
or a mistake from an unknown one that coincides with it. As in the hidden graders, a name is then a
hypothesis: `Probe` runs the student's function once more on `probe_args` (4 rows of 7 tokens with
lengths 7, 1, 4, 6, both signs of Â, ratios on both sides of the clip, junk at padding) with the
case's hyper-parameters, and confirms a name only when the same mistake's output on that probe
(stored as case ``"<case>@probe"`` in known_mistakes.json by `tools/make_known_mistakes.py`) matches
the student's probe output too. The probe is public, fixed, and distinct from the hidden graders' own.

Tensor conventions follow the contract: [B, T] token tensors, prefix masks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ppo_course.grading_kit import compare
from ppo_course.grading_kit.known_mistakes import known_mistakes

#: The suffix of a case's probe rows in known_mistakes.json.
PROBE_SUFFIX = "@probe"


def probe_args(name: str) -> tuple | None:
    """Positional tensor arguments (float64, bool mask) of the public probe for contract function `name`,
    or None when it has none. Deterministic (a fixed seed); padding holds junk in [-20, 20]."""
    g = torch.Generator().manual_seed(20261207)
    B, T, V = 4, 7, 5
    m = torch.arange(T)[None, :] < torch.tensor([7, 1, 4, 6])[:, None]  # (B, T) bool

    def data(scale=1.0, shift=0.0):
        x = torch.randn(B, T, generator=g, dtype=torch.float64) * scale + shift
        junk = (torch.rand(B, T, generator=g, dtype=torch.float64) * 2 - 1) * 20
        return torch.where(m, x, junk)

    logp_old = -data().abs() - 0.1
    logp_new = logp_old + data(0.5)
    logits = torch.randn(B, T, V, generator=g, dtype=torch.float64) * 2
    table: dict[str, Callable[[], tuple]] = {
        "logprobs_from_logits": lambda: (logits, torch.randint(0, V, (B, T), generator=g)),
        "probability_ratio": lambda: (logp_new, logp_old),
        "clipped_surrogate_loss": lambda: (logp_new, logp_old, data(), m),
        "clipped_value_loss": lambda: (data(), data(), data(), m),
        "entropy_from_logits": lambda: (logits, m),
        "ppo_loss": lambda: (logp_new, logp_old, data(), data(), data(), data(), logits, m),
        "compute_gae": lambda: (data(), data(), m),
        "whiten": lambda: (data(2.0, 1.0), m),
        "per_token_kl": lambda: (logp_new, logp_old, m),
        "kl_shaped_rewards": lambda: (torch.randn(B, generator=g, dtype=torch.float64), logp_new, logp_old, m),
    }
    return table[name]() if name in table else None


def picker(quantity: str) -> Callable[[Any], Any]:
    """The compared part of an output for a MISTAKE_CASES quantity ("output" or "output[i]"); for "output",
    a returned (loss, stats) pair gives its loss (the variants of ppo_loss return the loss only)."""
    if quantity.startswith("output["):
        index = int(quantity[7:-1])
        return lambda out: out[index] if isinstance(out, (tuple, list)) and len(out) > index else None
    return lambda out: out[0] if isinstance(out, (tuple, list)) and out else out


class Probe:
    """Confirms a known mistake's name on the public probe: `probe(diagnosis)` is True or False.

    Args:
        student: the provider's module (``student.<function>(*args, **kwargs)``).
        case: a key of the test module's ``MISTAKE_CASES`` ({case: (function, args_thunk, quantity)}).
        cases: that ``MISTAKE_CASES``.

    A case without probe rows (a gradient, the KL controller, a function without a probe) confirms
    every name, as before; a student function that raises on the probe, or returns something else
    than a tensor there, confirms none.
    """

    def __init__(self, student: Any, case: str, cases: dict):
        self.student, self.case = student, case
        self.function, self.make_args, self.quantity = cases[case]
        self._seen: list = []

    def _student_output(self) -> Any:
        if not self._seen:
            _, kwargs = self.make_args()
            try:
                out = picker(self.quantity)(getattr(self.student, self.function)(*probe_args(self.function), **kwargs))
            except Exception:  # the student's code fails on the probe: no evidence for a name
                out = None
            self._seen.append(out)
        return self._seen[0]

    def __call__(self, diagnosis: str) -> bool:
        rows = known_mistakes(self.case + PROBE_SUFFIX)
        if not rows or probe_args(self.function) is None:
            return True
        got = self._student_output()
        if not isinstance(got, torch.Tensor):
            return False
        mask = probe_args(self.function)[-1] if self.function != "probability_ratio" else None
        if got.dim() == 0 or self.function == "logprobs_from_logits":
            mask = None
        rtol = atol = 1e-6 if got.dtype == torch.float32 else 1e-9
        return any(d == diagnosis and compare.same_values(got, value.to(got.dtype), rtol, atol, mask)
                   for d, value in rows)
