"""The chapter's four interactives, computed on the server with ``ppo_reference`` (Book §5.2, §5.5, fig. 5.1, §5.9).

Nothing a page shows is typed into a template: each function below returns the
numbers for one state of an interactive, computed by the trusted reference
(``clipped_surrogate_loss`` and autograd for the clip explorer,
``RolloutBuffer`` for the lifecycle, ``kl_shaped_rewards``/``compute_gae``/
``whiten``/``probability_ratio`` for the PPO step, ``PPOConfig`` and its
``TYPICAL_BANDS`` for the danger board). The pages call them through
``/api/...`` (JavaScript) or through a plain form (no JavaScript).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

# The four cases of eq. 5.9, in the chapter's words (Book §5.2 "Go deeper").
CASES = {
    (True, True): "Â > 0 and r < 1 + ε → gradient flows (keep pushing up)",
    (True, False): "Â > 0 and r ≥ 1 + ε → gradient zero (already increased enough)",
    (False, True): "Â < 0 and r > 1 − ε → gradient flows (keep pushing down)",
    (False, False): "Â < 0 and r ≤ 1 − ε → gradient zero (already decreased enough)",
}


def _check_range(name: str, value: float, lo: float, hi: float) -> float:
    value = float(value)
    if not math.isfinite(value) or not lo <= value <= hi:
        raise ValueError(f"{name} must be a number in [{lo:g}, {hi:g}], got {value!r}")
    return value


def clip_point(r: float, adv: float, eps: float = 0.2) -> dict[str, Any]:
    """One token of eq. 5.1 and its gradient (eq. 5.9), via ``ppo_reference.clipped_surrogate_loss``.

    Args:
        r: the probability ratio, in [0.05, 3]. adv: the advantage Â, in [−3, 3], not 0.
        eps: the clip range ε, in [0.01, 0.9].

    Returns:
        ``{"r", "adv", "eps", "unclipped" (r·Â), "clipped" (clip(r)·Â), "objective" (the min),
        "gradient" (∂L/∂ log π_θ), "flows" (bool), "case" (the chapter's sentence)}``.

    Raises:
        ValueError: for a value out of range (the message names it).
    """
    import torch

    import ppo_reference as ref

    r = _check_range("r", r, 0.05, 3.0)
    adv = _check_range("Â", adv, -3.0, 3.0)
    eps = _check_range("ε", eps, 0.01, 0.9)
    if adv == 0.0:
        raise ValueError("Â must not be 0 (then every term is 0 and no case of eq. 5.9 applies)")
    logp = torch.tensor([[math.log(r)]], dtype=torch.float64, requires_grad=True)  # (1, 1)
    zero = torch.zeros(1, 1, dtype=torch.float64)
    loss = ref.clipped_surrogate_loss(logp, zero, torch.tensor([[adv]], dtype=torch.float64),
                                      torch.ones(1, 1, dtype=torch.bool), clip_eps=eps)
    loss.backward()
    objective, gradient = -float(loss.detach()), -float(logp.grad[0, 0])  # the reference returns −L
    clipped_r = min(max(r, 1 - eps), 1 + eps)
    flows = gradient != 0.0
    return {
        "r": r, "adv": adv, "eps": eps,
        "unclipped": r * adv, "clipped": clipped_r * adv, "objective": objective,
        "gradient": gradient, "flows": flows, "case": CASES[(adv > 0, flows)],
    }


def clip_curve(adv: float, eps: float = 0.2, n: int = 61) -> list[dict[str, float]]:
    """``clip_point`` over r ∈ [0.4, 1.6] (``n`` points): the curve the explorer draws."""
    return [clip_point(0.4 + 1.2 * i / (n - 1), adv, eps) for i in range(n)]


CHART_W, CHART_H, CHART_PAD = 600.0, 240.0, 24.0


def clip_chart(curve: list[dict[str, float]], point: dict[str, Any]) -> dict[str, Any]:
    """SVG coordinates of the clip explorer's figure (the chapter's plot of eq. 5.1 against r).

    x maps r ∈ [0.4, 1.6] and y the objective's range over the curve (and the
    point) onto a ``CHART_W`` × ``CHART_H`` box; returns the polyline's
    ``points``, the x of the clip edges 1 ± ε, the point's (x, y) and the
    y-range. ``static/interactives.js`` applies the same mapping.
    """
    ys = [p["objective"] for p in curve] + [point["objective"]]
    lo, hi = min(ys), max(ys)
    if hi - lo < 1e-9:
        lo, hi = lo - 1.0, hi + 1.0

    def x(r: float) -> float:
        return CHART_PAD + (r - 0.4) / 1.2 * (CHART_W - 2 * CHART_PAD)

    def y(v: float) -> float:
        return CHART_H - CHART_PAD - (v - lo) / (hi - lo) * (CHART_H - 2 * CHART_PAD)

    eps = point["eps"]
    return {
        "points": " ".join(f"{x(p['r']):.1f},{y(p['objective']):.1f}" for p in curve),
        "x_lo": x(max(0.4, 1 - eps)), "x_hi": x(min(1.6, 1 + eps)),
        "px": x(min(max(point["r"], 0.4), 1.6)), "py": y(point["objective"]), "lo": lo, "hi": hi,
        "w": CHART_W, "h": CHART_H, "pad": CHART_PAD,
    }


ACTIONS = ("collect", "train", "purge", "reuse")
DRIFT_PER_UPDATE = 0.1  # nats per policy update, for the buffer interactive's ratio


def drift_ratio(updates: int, collected_at: int | None) -> float | None:
    """r = π_now/π_collect on a token collected ``updates − collected_at`` policy updates ago (eq. 5.20).

    The toy policy's log-prob of the sampled token rises by ``DRIFT_PER_UPDATE`` nats per update, so
    r = exp(DRIFT_PER_UPDATE · age), computed by ``ppo_reference.probability_ratio``; None without data.
    """
    if collected_at is None:
        return None
    import torch

    import ppo_reference as ref

    logp_old = torch.tensor([-1.0], dtype=torch.float64)
    return float(ref.probability_ratio(logp_old + DRIFT_PER_UPDATE * (updates - collected_at), logp_old))


def buffer_lifecycle(actions: list[str]) -> dict[str, Any]:
    """Replay ``actions`` on a fresh ``ppo_reference.RolloutBuffer`` and, beside it, a replay buffer.

    ``collect`` adds a batch of 4 sequences × 3 tokens; ``train`` runs one epoch
    of mini-batches of 2 (starting the train phase first if needed); ``purge``
    wipes the rollout; ``reuse`` tries to train on purged data. The rollout
    buffer's own errors (RuntimeError) are reported, which is the lesson: data of
    an older policy cannot be used. The replay buffer keeps everything and
    samples it again, so its data's age grows without bound.

    The policy moves on every successful ``train`` (a toy policy whose
    log-prob of each sampled token rises by :data:`DRIFT_PER_UPDATE` nats per
    update), so each step also reports the probability ratio
    r = π_now/π_collect (``ppo_reference.probability_ratio``, eq. 5.20) on the
    rollout's data (at most one cycle of updates old: stays near 1) and on the
    replay buffer's oldest data (drifts away from 1 without bound) — the
    chapter's reason for the purge (Book §5.5.2).

    Returns:
        ``{"steps": [{"action", "phase", "size", "cycle", "error", "replay_size", "replay_oldest_cycle",
        "updates", "rollout_ratio", "replay_ratio"}], ...}`` (ratios None when the buffer is empty).

    Raises:
        ValueError: for an unknown action or more than 40 actions.
    """
    if len(actions) > 40:
        raise ValueError("at most 40 actions")
    unknown = [a for a in actions if a not in ACTIONS]
    if unknown:
        raise ValueError(f"unknown action(s) {unknown}; use {', '.join(ACTIONS)}")
    lab = _BufferLab()
    steps = []
    for action in actions:
        error = None
        try:
            lab.apply(action)
        except (RuntimeError, ValueError, StopIteration) as exc:
            error = str(exc) or type(exc).__name__
        steps.append(lab.step(action, error))
    return {"steps": steps, "phase": lab.buf.phase, "size": len(lab.buf), "replay_size": len(lab.replay)}


class _BufferLab:
    """The lifecycle interactive's state: a ``ppo_reference.RolloutBuffer``, a replay buffer beside it, and
    the toy policy's updates (see :func:`buffer_lifecycle`)."""

    def __init__(self) -> None:
        import torch

        import ppo_reference as ref

        self.buf = ref.RolloutBuffer()
        self.generator = torch.Generator().manual_seed(0)
        self.cycle, self.replay = 0, []  # replay buffer: (cycle collected) per sequence
        self.updates, self.rollout_at, self.replay_at = 0, None, []  # policy updates so far; when collected
        self.stale_iterator = None

    def apply(self, action: str) -> None:
        """Run one action; the rollout buffer's own errors (and ``reuse`` before any ``train``) propagate."""
        import torch

        buf = self.buf
        if action == "collect":
            buf.add(logp_old=torch.full((4, 3), -1.0), rewards=torch.zeros(4, 3))
            self.replay.extend([self.cycle] * 4)
            self.replay_at.extend([self.updates] * 4)
            self.rollout_at = self.updates if self.rollout_at is None else self.rollout_at
        elif action == "train":
            if buf.phase == "collect":
                buf.start_training()
            self.stale_iterator = buf.minibatches(2, generator=self.generator)
            sum(1 for _ in buf.minibatches(2, generator=self.generator))
            self.updates += 1
        elif action == "purge":
            buf.purge()
            self.cycle += 1
            self.rollout_at = None
        elif action == "reuse":
            if self.stale_iterator is None:
                raise RuntimeError("nothing to reuse yet: train on a rollout first")
            next(self.stale_iterator)

    def step(self, action: str, error: str | None) -> dict[str, Any]:
        """The state after ``action`` (``error``: what it raised, or None), as one entry of ``steps``."""
        buf, replay = self.buf, self.replay
        return {
            "action": action, "phase": buf.phase, "size": len(buf), "cycle": self.cycle, "error": error,
            "replay_size": len(replay), "replay_oldest_cycle": min(replay) if replay else None,
            "updates": self.updates, "rollout_ratio": drift_ratio(self.updates, self.rollout_at if len(buf) else None),
            "replay_ratio": drift_ratio(self.updates, min(self.replay_at) if self.replay_at else None),
        }


def ppo_step_walkthrough(r_rm: float = 2.0, logp: list[float] | None = None,
                         ref_logp: list[float] | None = None, values: list[float] | None = None) -> dict[str, Any]:
    """Fig. 5.1's six steps with the book's config, the arithmetic done by ``ppo_reference``.

    The config (batch 128 prompts, 512 max tokens, β = 0.05, γ = 1.0, λ = 0.95,
    4 epochs × mini-batches of 16, ε = 0.2, lr 1.5e-6, grad-norm clip 1.0) is
    ``ppo_course.config.PPOConfig()``'s defaults (the book's listing). The token
    values are a small illustrative response (the chapter gives formulas, not a
    70B model's log-probs): its final reward R = r_RM − β × mean_KL (placement
    ``last_token``), its GAE advantages and returns, the whitened advantages,
    and the ratio and clipped objective of its first token after one update.

    Raises:
        ValueError: for lists of different lengths (1–8 tokens), a log-prob > 0 or r_RM out of [−10, 10].
    """
    import torch

    import ppo_reference as ref
    from ppo_course.config import PPOConfig

    cfg = PPOConfig()
    logp = list(logp) if logp is not None else [-1.2, -0.4, -2.1, -0.7]
    ref_logp = list(ref_logp) if ref_logp is not None else [-1.5, -0.5, -2.0, -0.9]
    values = list(values) if values is not None else [0.3, 0.5, 0.6, 0.8]
    r_rm = _check_range("r_RM", r_rm, -10.0, 10.0)
    n = len(logp)
    if not 1 <= n <= 8 or len(ref_logp) != n or len(values) != n:
        raise ValueError("log π, log π_ref and V need the same number of tokens (1–8)")
    if any(x > 0 for x in logp + ref_logp):
        raise ValueError("a log-probability is ≤ 0 (a probability is ≤ 1)")
    t = lambda xs: torch.tensor([xs], dtype=torch.float64)  # noqa: E731  (1, T)
    mask = torch.ones(1, n, dtype=torch.bool)
    kl = ref.per_token_kl(t(logp), t(ref_logp), mask)  # (1, T)
    rewards = ref.kl_shaped_rewards(torch.tensor([r_rm], dtype=torch.float64), t(logp), t(ref_logp), mask,
                                    kl_coef=cfg.init_kl_coef, placement="last_token")
    advantages, returns = ref.compute_gae(rewards, t(values), mask, gamma=cfg.gamma, lam=cfg.lam)
    whitened = ref.whiten(advantages, mask) if n >= 2 else advantages
    new_logp0 = logp[0] + 0.1  # one small update of the first token's log-prob, for the ratio step
    ratio0 = float(ref.probability_ratio(t([new_logp0]), t([logp[0]])))
    a0 = float(whitened[0, 0])
    objective0 = min(ratio0 * a0, min(max(ratio0, 1 - cfg.cliprange), 1 + cfg.cliprange) * a0)
    return {
        "config": {"batch_size": cfg.batch_size, "max_new_tokens": cfg.max_new_tokens, "init_kl_coef": cfg.init_kl_coef,
                   "gamma": cfg.gamma, "lam": cfg.lam, "ppo_epochs": cfg.ppo_epochs, "mini_batch_size": cfg.mini_batch_size,
                   "cliprange": cfg.cliprange, "learning_rate": cfg.learning_rate, "max_grad_norm": cfg.max_grad_norm,
                   "temperature": cfg.temperature, "top_p": cfg.top_p,
                   "transitions": cfg.batch_size * cfg.max_new_tokens},
        "r_rm": r_rm, "logp": logp, "ref_logp": ref_logp, "values": values,
        "kl": [float(x) for x in kl[0]], "mean_kl": float(kl.mean()),
        "rewards": [float(x) for x in rewards[0]], "final_reward": float(rewards[0, -1]),
        "advantages": [float(x) for x in advantages[0]], "returns": [float(x) for x in returns[0]],
        "whitened": [float(x) for x in whitened[0]],
        "ratio0": ratio0, "new_logp0": new_logp0, "objective0": objective0,
    }


def danger(parameter: str, value: float) -> dict[str, Any]:
    """Where ``value`` of ``parameter`` sits against the book's danger table (``PPOConfig``'s bands, Book §5.9).

    Returns:
        ``{"parameter", "value", "low", "high", "verdict" ("too low"/"typical"/"too high"),
        "effect" (the table's words), "warning" (PPOConfig's own warning text or None)}``.

    Raises:
        ValueError: for an unknown parameter or a non-positive value.
    """
    from ppo_course.config import TYPICAL_BANDS, PPOConfig

    if parameter not in TYPICAL_BANDS:
        raise ValueError(f"unknown parameter {parameter!r}; choose one of {', '.join(TYPICAL_BANDS)}")
    value = float(value)
    if not math.isfinite(value) or value <= 0 or value > 1e6:
        raise ValueError(f"{parameter} must be a positive number, got {value!r}")
    low, high, effect = TYPICAL_BANDS[parameter]
    verdict = "too low" if value < low else "too high" if value > high else "typical"
    kwargs: dict[str, Any] = {parameter: int(value) if parameter in ("ppo_epochs", "batch_size") else value}
    if parameter == "batch_size":
        kwargs.update(mini_batch_size=1, gradient_accumulation_steps=1)
    warning = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            PPOConfig(**kwargs)
        except ValueError as exc:
            warning = f"PPOConfig refuses it: {exc.errors()[0]['msg'] if hasattr(exc, 'errors') else exc}"
    texts = [str(w.message) for w in caught if parameter in str(w.message)]
    if texts and warning is None:
        warning = texts[0]
    return {"parameter": parameter, "value": value, "low": low, "high": high, "verdict": verdict,
            "effect": effect, "warning": warning}


def danger_parameters() -> list[dict[str, Any]]:
    """The danger table's parameters with their typical bands (from ``ppo_course.config.TYPICAL_BANDS``)."""
    from ppo_course.config import TYPICAL_BANDS

    return [{"parameter": p, "low": lo, "high": hi, "effect": e} for p, (lo, hi, e) in TYPICAL_BANDS.items()]
