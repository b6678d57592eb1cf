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

#: The suffix of a case's probe rows in known_mistakes.json; `PADDED_SUFFIX`: its rows on the probe with every
#: row padded (`probe_args(..., padded=True)`).
PROBE_SUFFIX, PADDED_SUFFIX = "@probe", "@probe_padded"

#: The probe's row lengths (of 7 tokens); `PADDED_LENGTHS`: the same rows with none full.
LENGTHS, PADDED_LENGTHS = (7, 1, 4, 6), (6, 1, 4, 6)

#: The contract functions whose probe has a mask (the padded form differs from the probe only there).
MASKED = ("clipped_surrogate_loss", "clipped_value_loss", "entropy_from_logits", "ppo_loss", "compute_gae", "whiten",
          "per_token_kl", "kl_shaped_rewards")


def probe_args(name: str, *, padded: bool = False) -> tuple | None:
    """Positional tensor arguments (float64, bool mask) of the public probe for contract function `name`,
    or None when it has none. Deterministic (a fixed seed); padding holds junk in [-20, 20].
    ``padded``: the same tensors with the mask of `PADDED_LENGTHS` (no full row), None where `name` has no mask."""
    if padded and name not in MASKED:
        return None
    g = torch.Generator().manual_seed(20261207)
    B, T, V = 4, 7, 5
    m = torch.arange(T)[None, :] < torch.tensor(LENGTHS)[:, None]  # (B, T) bool

    def data(scale=1.0, shift=0.0):
        x = torch.randn(B, T, generator=g, dtype=torch.float64) * scale + shift
        junk = (torch.rand(B, T, generator=g, dtype=torch.float64) * 2 - 1) * 20
        return torch.where(m, x, junk)

    logp_old = -data().abs() - 0.1
    logp_new = logp_old + data(0.5)
    logits = torch.randn(B, T, V, generator=g, dtype=torch.float64) * 2
    mm = torch.arange(T)[None, :] < torch.tensor(PADDED_LENGTHS if padded else LENGTHS)[:, None]  # the mask given
    table: dict[str, Callable[[], tuple]] = {
        "logprobs_from_logits": lambda: (logits, torch.randint(0, V, (B, T), generator=g)),
        "probability_ratio": lambda: (logp_new, logp_old),
        "clipped_surrogate_loss": lambda: (logp_new, logp_old, data(), mm),
        "clipped_value_loss": lambda: (data(), data(), data(), mm),
        "entropy_from_logits": lambda: (logits, mm),
        "ppo_loss": lambda: (logp_new, logp_old, data(), data(), data(), data(), logits, mm),
        "compute_gae": lambda: (data(), data(), mm),
        "whiten": lambda: (data(2.0, 1.0), mm),
        "per_token_kl": lambda: (logp_new, logp_old, mm),
        "kl_shaped_rewards": lambda: (torch.randn(B, generator=g, dtype=torch.float64), logp_new, logp_old, mm),
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
    every name, as before; a student function that raises on the probe is run on the probe with every
    row padded (``"<case>@probe_padded"`` rows); one that raises on both, or returns something else than
    a tensor, confirms none.
    """

    def __init__(self, student: Any, case: str, cases: dict):
        self.student, self.case = student, case
        self.function, self.make_args, self.quantity = cases[case]
        self._seen: list = []

    def _student_output(self) -> tuple[Any, bool]:
        """(the compared part of the student's output on the probe, whether it is the padded probe's): the
        padded probe is run when the student's code raises on the probe; None when it raises on both."""
        if not self._seen:
            _, kwargs = self.make_args()
            out, padded = None, False
            for padded in (False, True):
                args = probe_args(self.function, padded=padded)
                if args is None:
                    break
                try:
                    out = picker(self.quantity)(getattr(self.student, self.function)(*args, **kwargs))
                    break
                except Exception:  # the student's code fails on this probe: no evidence for a name from it
                    out = None
            self._seen.append((out, padded))
        return self._seen[0]

    def __call__(self, diagnosis: str) -> bool:
        if not known_mistakes(self.case + PROBE_SUFFIX) or probe_args(self.function) is None:
            return True
        got, padded = self._student_output()
        if not isinstance(got, torch.Tensor):
            return False
        rows = known_mistakes(self.case + (PADDED_SUFFIX if padded else PROBE_SUFFIX))
        mask = probe_args(self.function, padded=padded)[-1] if self.function != "probability_ratio" else None
        if got.dim() == 0 or self.function == "logprobs_from_logits":
            mask = None
        rtol = atol = 1e-6 if got.dtype == torch.float32 else 1e-9
        return any(d == diagnosis and compare.same_values(got, value.to(got.dtype), rtol, atol, mask)
                   for d, value in rows)
