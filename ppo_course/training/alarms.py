"""What goes wrong in a PPO run, detected step by step (Book §5.9's danger table, stop 8).

``Alarms.check(record)`` looks at one step's stats as the step ends and
returns what it sees: a *stop* (the run cannot teach anything more: a NaN
or inf, the KL or the value loss blowing up, the entropy collapsing, the
clip fraction stuck at 0 or at 1) or a *flag* (the first step whose stats
depart from the reference run's at the same step, while the two runs are
still comparable). With no reference run, only the absolute signs are used.

Thresholds (measured on the reference's 60-step toy run, seed 0: KL 0 → ~3
nats, entropy 1.5–1.8 nats, clip fraction 0.003–0.09, value loss 5.1 →
0.15): each is far outside what a correct implementation shows with any of
stop 8's suggested settings, unless the reference run shows it too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["WATCHED", "Alarm", "Alarms"]

#: The five statistics of the figure and the table: (stat key, label).
WATCHED: tuple[tuple[str, str], ...] = (
    ("ppo/mean_scores", "reward (score)"),
    ("objective/kl", "KL (nats / sequence)"),
    ("ppo/policy/entropy", "entropy (nats / token)"),
    ("ppo/policy/clipfrac", "clip fraction"),
    ("ppo/loss/value", "value loss"),
)
#: Relative and absolute tolerance of "the same as the reference's step" (float rounding of two implementations).
PARITY_RTOL = 1e-3
PARITY_ATOL = 1e-4
KL_BLOWUP_TARGETS = 5.0      # KL above this many target_kl ...
KL_BLOWUP_OVER_REF = 3.0     # ... and this many times the reference's (+ target_kl) at that step
VALUE_BLOWUP = 10.0          # value loss above this many times the reference's (or the first step's) value loss
ENTROPY_COLLAPSE = 0.25      # entropy below this fraction of the first step's
CLIP_STUCK_STEPS = 5         # clip fraction ≤ 1e-9 (or ≥ 0.9) this many steps in a row
CLIP_HIGH = 0.9


@dataclass(frozen=True)
class Alarm:
    """One finding about a step.

    Attributes:
        step: 1-based step.
        statistic: the stat key (e.g. ``"objective/kl"``).
        kind: ``"nan"``, ``"kl_blowup"``, ``"value_blowup"``, ``"entropy_collapse"``, ``"clip_stuck_0"``,
            ``"clip_stuck_1"`` (these stop the run) or ``"departs"`` (a flag: the run goes on).
        text: one sentence: what was seen, with the numbers.
    """

    step: int
    statistic: str
    kind: str
    text: str

    @property
    def stops(self) -> bool:
        """Whether this alarm ends the run (every kind but ``"departs"``)."""
        return self.kind != "departs"


def _value(record: dict[str, float], key: str) -> float:
    v = record.get(key, float("nan"))
    return float(v) if isinstance(v, (int, float)) else float("nan")


class Alarms:
    """The watch over one run (stateful: streaks and the first step's values).

    Args:
        target_kl: ``PPOConfig.target_kl`` (nats per sequence).
        reference: the reference run's records, step by step (None or [] when there is none).
    """

    def __init__(self, target_kl: float, reference: list[dict[str, float]] | None = None) -> None:
        self.target_kl = float(target_kl)
        self.reference = list(reference or [])
        self.first: dict[str, float] = {}
        self.streak_low = self.streak_high = 0
        self.departed = False

    def _ref(self, step: int, key: str) -> float | None:
        return _value(self.reference[step - 1], key) if 0 < step <= len(self.reference) else None

    def check(self, record: dict[str, float]) -> list[Alarm]:
        """The alarms of this step, stops first (an empty list when all is well).

        Args:
            record: the step's stats (``step`` and the keys of ``WATCHED``).
        """
        step = int(record["step"])
        if not self.first:
            self.first = {key: _value(record, key) for key, _ in WATCHED}
        found = [a for a in (self._nan(step, record), self._kl(step, record), self._value_loss(step, record),
                             self._entropy(step, record), self._clip(step, record)) if a is not None]
        if not found and not self.departed:
            flag = self._departs(step, record)
            if flag is not None:
                self.departed = True
                found.append(flag)
        return found

    def _nan(self, step: int, record: dict[str, float]) -> Alarm | None:
        for key, label in WATCHED:
            v = _value(record, key)
            if not math.isfinite(v):
                return Alarm(step, key, "nan", f"{label} is {v} at step {step}")
        return None

    def _kl(self, step: int, record: dict[str, float]) -> Alarm | None:
        kl, ref = _value(record, "objective/kl"), self._ref(step, "objective/kl")
        bound = KL_BLOWUP_TARGETS * self.target_kl
        if ref is not None and math.isfinite(ref):
            bound = max(bound, KL_BLOWUP_OVER_REF * ref + self.target_kl)
        if kl > bound:
            return Alarm(step, "objective/kl", "kl_blowup",
                         f"the KL to the reference policy blew up: {kl:.3g} nats at step {step} (above {bound:.3g}"
                         + (f"; the reference run: {ref:.3g})" if ref is not None else ")"))
        if kl < -self.target_kl:
            return Alarm(step, "objective/kl", "kl_blowup",
                         f"the KL to the reference policy is {kl:.3g} nats at step {step}: a KL is never that negative")
        return None

    def _value_loss(self, step: int, record: dict[str, float]) -> Alarm | None:
        v, ref = _value(record, "ppo/loss/value"), self._ref(step, "ppo/loss/value")
        base = ref if ref is not None and math.isfinite(ref) else self.first["ppo/loss/value"]
        bound = VALUE_BLOWUP * max(abs(base), 0.1)
        if v > bound:
            return Alarm(step, "ppo/loss/value", "value_blowup",
                         f"the value loss blew up: {v:.3g} at step {step} (above {bound:.3g}, "
                         f"{VALUE_BLOWUP:g}× the {'reference run' if ref is not None else 'first step'}'s {base:.3g})")
        return None

    def _entropy(self, step: int, record: dict[str, float]) -> Alarm | None:
        h, h0 = _value(record, "ppo/policy/entropy"), self.first["ppo/policy/entropy"]
        if math.isfinite(h0) and h < ENTROPY_COLLAPSE * h0:
            return Alarm(step, "ppo/policy/entropy", "entropy_collapse",
                         f"the entropy collapsed: {h:.3g} nats at step {step}, from {h0:.3g} at step 1")
        return None

    def _clip(self, step: int, record: dict[str, float]) -> Alarm | None:
        c = _value(record, "ppo/policy/clipfrac")
        ref = self._ref(step, "ppo/policy/clipfrac")
        self.streak_low = self.streak_low + 1 if c <= 1e-9 and (ref is None or ref > 1e-9) else 0
        self.streak_high = self.streak_high + 1 if c >= CLIP_HIGH and (ref is None or ref < CLIP_HIGH) else 0
        for streak, kind, at in ((self.streak_low, "clip_stuck_0", 0), (self.streak_high, "clip_stuck_1", 1)):
            if streak >= CLIP_STUCK_STEPS:
                return Alarm(step, "ppo/policy/clipfrac", kind,
                             f"the clip fraction is stuck at {at}: {c:.3g} for {streak} steps in a row (step {step})"
                             + ("; the reference run's is not" if ref is not None else ""))
        return None

    def _departs(self, step: int, record: dict[str, float]) -> Alarm | None:
        for key, label in WATCHED:
            ref = self._ref(step, key)
            if ref is None:
                return None
            v = _value(record, key)
            if not abs(v - ref) <= PARITY_ATOL + PARITY_RTOL * abs(ref):
                return Alarm(step, key, "departs",
                             f"your run departs from the reference's at step {step}: {label} {v:.6g} against {ref:.6g}")
        return None
