"""The attempt policy of each stop: mastery (the default), a cooldown between attempts, or an attempt budget.

``attempt_policy.yaml`` beside this module holds the course default; a TA
passes another with ``ppo-course quiz serve --policy FILE``::

    default: {mode: mastery, cooldown_s: 120}
    stops:
      8: {mode: budget, max_attempts: 3}

- ``mastery`` (default, ``quiz_bank.mastery``): each attempt asks one unseen
  question per claim of the stop; the stop is complete when one attempt
  answers every claim right, each on a question not seen before; no verdict
  during the attempt, the missed claims and sections after it; attempts
  ``cooldown_s`` apart after a failed one. ``count_seen: true`` lets a right
  answer on a question seen before count (weaker: elimination then works).

- ``cooldown``: unlimited attempts; after a failed attempt the next one opens
  ``cooldown_s`` seconds later (time to reread the section the hints point at).
- ``budget``: at most ``max_attempts`` attempts, no waiting; once they are
  used, the stop stays closed until the TA raises the budget.

The two older modes ask every question of the stop in each attempt and pass
at 100%; ``per_answer_feedback`` (default: on for them, off for mastery) shows
right / not right after each answer. In every mode a failed attempt's review shows, per missed question, a hint and
the section to reread, never the right option; the full explanations appear
once the stop is passed. The page states the policy in words
(:meth:`AttemptPolicy.describe`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

DEFAULT_POLICY_FILE = Path(__file__).resolve().parent / "attempt_policy.yaml"


class AttemptPolicy(BaseModel):
    """The rule for starting a new attempt at one stop."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: Literal["mastery", "cooldown", "budget"] = "mastery"
    cooldown_s: float = Field(default=120.0, ge=0.0, le=7 * 24 * 3600)
    max_attempts: int = Field(default=3, ge=1, le=1000)
    per_answer_feedback: bool | None = None
    count_seen: bool = False

    @property
    def is_mastery(self) -> bool:
        """True for the mastery policy (one unseen item per claim; see ``quiz_bank.mastery``)."""
        return self.mode == "mastery"

    @property
    def shows_verdicts(self) -> bool:
        """Whether each answer is told right / not right at once (off for mastery unless set)."""
        return (not self.is_mastery) if self.per_answer_feedback is None else self.per_answer_feedback

    def describe(self) -> str:
        """The policy in words, as shown to the student on every stop page."""
        wait = f"{self.cooldown_s:g} s" if self.cooldown_s < 120 else f"{self.cooldown_s / 60:g} min"
        if self.is_mastery:
            from quiz_bank.mastery import RULE

            seen = (" A right answer on a question seen before also counts." if self.count_seen else "")
            return f"Mastery: {RULE}{seen} Unlimited attempts, {wait} apart after a failed one."
        if self.mode == "budget":
            return (f"You have {self.max_attempts} attempt(s) at this stop. After a failed attempt you get a hint "
                    "for each missed question; the explanations appear once you pass.")
        return (f"Unlimited attempts, {wait} apart after a failed one. After a failed attempt you get a hint "
                "for each missed question; the explanations appear once you pass.")

    def refusal(self, previous: list, now: float) -> str | None:
        """Why a new attempt cannot start now (None when it can); ``previous`` are the finished attempts."""
        if not previous:
            return None
        if any(a.passed for a in previous):
            return "you have already passed this stop"
        if self.mode == "budget":
            if len(previous) >= self.max_attempts:
                return f"you have used all {self.max_attempts} attempts at this stop; ask your TA"
            return None
        wait = previous[-1].finished_at + self.cooldown_s - now
        if wait > 0:
            return f"the next attempt opens in {int(wait) + 1} s: reread the sections the hints point at"
        return None


class PolicyFile(BaseModel):
    """``attempt_policy.yaml``: a default and per-stop overrides."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    default: AttemptPolicy = AttemptPolicy()
    stops: dict[int, AttemptPolicy] = Field(default_factory=dict)

    def for_stop(self, stop: int) -> AttemptPolicy:
        """The policy of ``stop`` (its override, else the default)."""
        return self.stops.get(stop, self.default)


def load_policy(path: Path | str | None = None) -> PolicyFile:
    """Read a policy file (default: the course's ``attempt_policy.yaml``).

    Raises:
        ValueError: if the file is unreadable or invalid (the message names it).
    """
    path = Path(path) if path is not None else DEFAULT_POLICY_FILE
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        policy = PolicyFile.model_validate(data)
    except (OSError, yaml.YAMLError, ValidationError) as exc:
        raise ValueError(f"{path}: invalid attempt policy: {exc}") from None
    bad = sorted(s for s in policy.stops if not 1 <= s <= 8)
    if bad:
        raise ValueError(f"{path}: stops must be 1–8, got {bad}")
    return policy
