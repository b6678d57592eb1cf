"""The book's PPO config (Book §5.8, stop 7), with TRL 0.11's names and the stop-8 danger table (Book §5.9).

``PPOConfig()`` holds the book's listing verbatim (learning_rate 1.5e-6,
batch_size 128, mini_batch_size 16, ppo_epochs 4, gamma 1.0, lam 0.95,
cliprange 0.2, cliprange_value 0.2, vf_coef 0.1, init_kl_coef 0.05,
target_kl 6.0, whiten_rewards True, gradient_accumulation_steps 4,
max_grad_norm 1.0) plus what the surrounding text fixes (temperature 0.7,
top-p 0.9, 512 new tokens, ent_coef 0.01 from eq. 5.2's c₂) and a few fields of
this package (kl_placement, kl_horizon, seed).

Where the book and TRL 0.11 differ (the contract's "The book's config versus
TRL"): ``target_kl`` here is the adaptive KL controller's target (TRL calls it
``target``; TRL's own ``target_kl`` is an early-stopping threshold);
advantages are always whitened, and ``whiten_rewards`` (TRL's meaning) also
whitens the rewards before GAE, without shifting their mean; one optimizer
step covers ``mini_batch_size × gradient_accumulation_steps`` sequences.

A value outside the book's "typical" band of the danger table warns
(``HyperparameterWarning``), never raises: leaving the band is how the
failure modes are shown.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any, Literal

import pydantic
from pydantic import Field


def _caller_stacklevel() -> int:
    """Stack level of the first frame outside pydantic and this module, so the warning points at the caller."""
    frame, level = sys._getframe(1), 1
    while frame is not None and (frame.f_code.co_filename == __file__ or "pydantic" in frame.f_code.co_filename):
        frame, level = frame.f_back, level + 1
    return level


class HyperparameterWarning(UserWarning):
    """A PPOConfig value is outside the typical band of the book's danger table (Book §5.9)."""


# Book §5.9, stop-8 danger table: field -> (low, high, what goes wrong outside).
TYPICAL_BANDS: dict[str, tuple[float, float, str]] = {
    "cliprange": (0.2, 0.2, "too low: no learning; too high: instability"),
    "init_kl_coef": (0.01, 0.1, "too low: reward hacking; too high: stuck at SFT"),
    "target_kl": (4.0, 8.0, "adaptive controller target; lower = conservative"),
    "ppo_epochs": (4, 4, "too many: overfits to the batch; too few: wastes generation compute"),
    "learning_rate": (1e-6, 5e-6, "too high: catastrophic forgetting"),
    "batch_size": (64, 256, "larger = smoother gradients, more generation compute"),
    "temperature": (0.7, 1.0, "lower: less exploration; higher: noisier advantages"),
}


class PPOConfig(pydantic.BaseModel):
    """Hyperparameters of one PPO run (Book §5.8 listing; TRL 0.11 ``PPOConfig`` names).

    Defaults are the book's stop-7 values. ``PPOConfig.toy()`` is the preset
    for the toy RLHF task of ``ppo_course.toy_task``.

    Raises:
        pydantic.ValidationError (a ``ValueError``): a non-positive rate or
        size, top_p outside (0, 1], an unknown kl_placement, or a batch_size
        not divisible by mini_batch_size × gradient_accumulation_steps.

    Warns:
        HyperparameterWarning: for each value outside the book's typical band
        (``TYPICAL_BANDS``), except the toy preset's own values.
    """

    model_config = pydantic.ConfigDict(extra="forbid", validate_assignment=False)

    learning_rate: float = Field(1.5e-6, ge=0, description="Adam step size (book and TRL: learning_rate); 0 freezes the policy, which makes r ≡ 1.")
    batch_size: int = Field(128, ge=1, description="Prompts (sequences) per PPO step (book and TRL: batch_size).")
    mini_batch_size: int = Field(16, ge=1, description="Sequences per forward/backward pass (book: 'gradient accumulation unit'; TRL: mini_batch_size).")
    ppo_epochs: int = Field(4, ge=1, description="Passes over one rollout before the purge (book: K epochs; TRL: ppo_epochs).")
    gamma: float = Field(1.0, ge=0, le=1, description="Discount γ of GAE; 1.0 for single-turn RLHF (book and TRL: gamma).")
    lam: float = Field(0.95, ge=0, le=1, description="GAE λ (book and TRL: lam).")
    cliprange: float = Field(0.2, gt=0, description="PPO ε of the clipped ratio, eq. 5.1 (TRL: cliprange).")
    cliprange_value: float = Field(0.2, gt=0, description="Clip range of the value loss around the old values, eq. 5.2 (TRL: cliprange_value).")
    vf_coef: float = Field(0.1, ge=0, description="Value-loss coefficient c₁ of eq. 5.2 (TRL: vf_coef).")
    init_kl_coef: float = Field(0.05, ge=0, description="Starting KL penalty β in R = r_RM − β·KL (TRL: init_kl_coef).")
    target_kl: float = Field(6.0, gt=0, description="Adaptive KL controller's target in nats per sequence (book: target_kl; TRL calls it `target`; TRL's own target_kl is an early-stop threshold).")
    whiten_rewards: bool = Field(True, description="Also whiten the shaped rewards before GAE, keeping their mean (TRL's meaning); advantages are always whitened (book: 'normalize advantages').")
    gradient_accumulation_steps: int = Field(4, ge=1, description="Mini-batches per optimizer step: one step covers mini_batch_size × gradient_accumulation_steps sequences (TRL: same name).")
    max_grad_norm: float = Field(1.0, gt=0, description="Global gradient-norm clip before each optimizer step (TRL: max_grad_norm).")
    ent_coef: float = Field(0.01, ge=0, description="Entropy bonus c₂ of eq. 5.2 (TRL 0.11's step() has none; the book's loss does).")
    temperature: float = Field(0.7, gt=0, description="Sampling temperature of the generate call (Book §5.8: 0.7; a generation kwarg in TRL).")
    top_p: float = Field(0.9, gt=0, le=1, description="Nucleus sampling mass (Book §5.8: 0.9; a generation kwarg in TRL).")
    max_new_tokens: int = Field(512, ge=1, description="Response length cap T (Book §5.5: 512 max tokens; a generation kwarg in TRL).")
    kl_placement: Literal["per_token", "last_token"] = Field("per_token", description="'per_token': −β·KL on every token (TRL's step()); 'last_token': R = r_RM − β·mean_KL on the last token (Book §5.5).")
    kl_horizon: float = Field(10000, gt=0, description="Horizon of the adaptive KL controller, in sequences (TRL: horizon).")
    seed: int = Field(0, description="Seed of the run's torch.Generator (sampling and mini-batch order).")

    @pydantic.model_validator(mode="after")
    def _check_batching(self) -> "PPOConfig":
        per_step = self.mini_batch_size * self.gradient_accumulation_steps
        if self.batch_size % per_step:
            raise ValueError(
                f"PPOConfig: batch_size={self.batch_size} must be divisible by mini_batch_size × "
                f"gradient_accumulation_steps = {self.mini_batch_size} × {self.gradient_accumulation_steps} = {per_step} "
                "(one optimizer step covers that many sequences, as in TRL)"
            )
        return self

    @pydantic.model_validator(mode="after")
    def _warn_outside_typical_band(self, info: pydantic.ValidationInfo) -> "PPOConfig":
        silent = (info.context or {}).get("silent_fields", {})
        for name, (low, high, effect) in TYPICAL_BANDS.items():
            value = getattr(self, name)
            if name in silent and silent[name] == value:
                continue
            if not low <= value <= high:
                band = f"{low:g}" if low == high else f"{low:g}–{high:g}"
                warnings.warn(
                    f"PPOConfig.{name}={value:g} is outside the book's typical value {band} "
                    f"(Book §5.9 danger table: {effect})",
                    HyperparameterWarning,
                    stacklevel=_caller_stacklevel(),
                )
        return self

    @property
    def optimizer_batch_size(self) -> int:
        """Sequences per optimizer step: mini_batch_size × gradient_accumulation_steps."""
        return self.mini_batch_size * self.gradient_accumulation_steps

    @classmethod
    def toy(cls, **overrides: Any) -> "PPOConfig":
        """The preset for the toy RLHF task (``ppo_course.toy_task``), silent about its own values.

        The toy policy has ~0.1 M parameters and its responses are 16 tokens,
        so it needs a far larger learning rate (3e-4 against the book's
        1.5e-6 for 70B) and a smaller batch (64 against the book's 128, in
        mini-batches of 16 × 2 accumulated) to learn in a minute on a CPU. It
        samples at temperature 1.0 without top-p, so that the per-token KL
        estimate is that of the sampling distribution (see the top-p caveat in
        ``CausalLMWithValueHead.generate``). The other values are the book's.
        These deliberate departures from the danger table do not warn; an
        override that leaves the band does.

        Args:
            **overrides: any PPOConfig field, applied on top of the preset.

        Returns:
            A validated PPOConfig.

        Raises:
            pydantic.ValidationError: as the constructor.
        """
        preset: dict[str, Any] = dict(
            learning_rate=3e-4,
            batch_size=64,
            mini_batch_size=16,
            gradient_accumulation_steps=2,
            ppo_epochs=4,
            init_kl_coef=0.05,
            target_kl=6.0,
            kl_horizon=10000,
            temperature=1.0,
            top_p=1.0,
            max_new_tokens=16,
        )
        return cls.model_validate({**preset, **overrides}, context={"silent_fields": preset})
