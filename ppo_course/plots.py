"""The chapter's interactives as static figures (matplotlib, Agg backend), and the palette they share.

- ``clip_explorer``: L^CLIP, r·Â and clip(r, 1−ε, 1+ε)·Â against r for Â > 0 and Â < 0,
  with the zero-gradient regions of eq. 5.9 shaded (Book §5.2, eqs. 5.1 and 5.9).
- the rollout-buffer lifecycle (Book §5.5, §5.7) has its own module,
  ``ppo_course.lifecycle_plot`` (``buffer_lifecycle``, ``LifecycleData``).
- ``ppo_step_walkthrough``: one PPO step for a 70B chat model, fig. 5.1's six steps with
  the book's numbers (Book §5.5-5.6, p. 146-147).
- ``danger_board``: toy runs with one hyper-parameter too low / typical / too high next to
  the consequence the stop-8 table states (Book §5.9). Takes the run logs as data
  (``DangerData``). Like the lifecycle figure, it never runs PPO.

Every function returns a ``matplotlib.figure.Figure`` made with the object API
(no pyplot state), so it renders headless; ``save(fig, path)`` writes a PNG.
Student-side module: it imports torch-free plotting code only, never ``ppo_reference``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless: figures are written to files, never shown
import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch  # noqa: E402
from pydantic import BaseModel, ConfigDict, Field, model_validator  # noqa: E402

__all__ = ["clip_explorer", "ppo_step_walkthrough", "danger_board", "save", "DangerData", "DangerRun", "DANGER_TABLE"]

# One palette for all four figures (``ppo_course.lifecycle_plot`` imports it).
BLUE, ORANGE, GREEN, RED, GREY, INK = "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#8c8c8c", "#222222"
ZERO_GRAD = "#f3c5c5"  # shading of the regions where eq. 5.9's gradient is 0

# Book §5.9, the danger table, verbatim: parameter -> (typical value, effect of getting it wrong).
DANGER_TABLE: dict[str, tuple[str, str]] = {
    "cliprange": ("0.2", "Too low: no learning. Too high: instability."),
    "init_kl_coef": ("0.01–0.1", "Too low: reward hacking. Too high: stuck at SFT."),
    "target_kl": ("4–8", "Adaptive controller target. Lower = conservative."),
    "ppo_epochs": ("4", "Too many: overfits to batch. Too few: wastes generation compute."),
    "learning_rate": ("1–5 × 10⁻⁶", "Too high: catastrophic forgetting."),
    "batch_size": ("64–256", "Larger = smoother gradients, more generation compute."),
    "temperature": ("0.7–1.0", "Lower: less exploration. Higher: noisier advantages."),
}


def save(fig: Figure, path: str | Path, dpi: int = 130) -> Path:
    """Write ``fig`` as a PNG (parent folders created); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi, bbox_inches="tight", facecolor="white")
    return path


# ----------------------------------------------------------------------------- 1. clip explorer


def clip_explorer(clip_eps: float = 0.2, advantages: Sequence[float] = (1.0, -1.0), r_max: float = 2.0) -> Figure:
    """Book eq. 5.1 per token, L = min(r·Â, clip(r, 1−ε, 1+ε)·Â), against the ratio r (one panel per Â).

    The shaded bands are where the clipped term is the smaller one, so ∂L/∂r = 0
    (eq. 5.9): Â > 0 and r ≥ 1+ε ("already increased enough"), Â < 0 and
    r ≤ 1−ε ("already decreased enough"). Elsewhere the gradient is Â.

    Args:
        clip_eps: ε, the clip range (the book's 0.2); 0 < ε < 1.
        advantages: one panel per value of Â (non-zero floats; the book's two cases by default).
        r_max: the ratio axis runs from 0 to r_max (> 1 + ε).

    Returns:
        A Figure with len(advantages) panels.

    Raises:
        ValueError: if ε is not in (0, 1), an advantage is 0, or r_max ≤ 1 + ε.
    """
    if not 0.0 < clip_eps < 1.0:
        raise ValueError(f"clip_explorer: clip_eps must be in (0, 1), got {clip_eps}")
    if not advantages or any(a == 0 for a in advantages):
        raise ValueError(f"clip_explorer: advantages must be non-zero, got {list(advantages)}")
    if r_max <= 1.0 + clip_eps:
        raise ValueError(f"clip_explorer: r_max must exceed 1 + clip_eps = {1 + clip_eps}, got {r_max}")
    lo, hi = 1.0 - clip_eps, 1.0 + clip_eps
    r = np.linspace(0.0, r_max, 801)
    fig = Figure(figsize=(5.2 * len(advantages), 4.4), layout="constrained")
    axes = fig.subplots(1, len(advantages), squeeze=False)[0]
    for ax, adv in zip(axes, advantages):
        _clip_panel(ax, adv, r, lo, hi, r_max)
    axes[0].legend(loc="upper left", fontsize=8.5, framealpha=0.95)
    fig.suptitle(f"Clip explorer: the pessimistic min of eq. 5.1 with ε = {clip_eps:g} (Book §5.2)", fontsize=12)
    return fig


def _clip_panel(ax, adv: float, r: np.ndarray, lo: float, hi: float, r_max: float) -> None:
    """One panel of ``clip_explorer`` for advantage ``adv``: the three curves over ``r``, the ∇ = 0 band of
    eq. 5.9 between ``lo`` = 1−ε / ``hi`` = 1+ε and the axis ends, and where the gradient flows."""
    unclipped = r * adv
    clipped = np.clip(r, lo, hi) * adv
    objective = np.minimum(unclipped, clipped)
    start, stop = (hi, r_max) if adv > 0 else (0.0, lo)
    ax.axvspan(start, stop, color=ZERO_GRAD, alpha=0.55, lw=0, label="gradient = 0 (eq. 5.9)")
    ax.plot(r, unclipped, color=BLUE, ls="--", lw=1.6, label="r·Â")
    ax.plot(r, clipped, color=ORANGE, ls=":", lw=2.2, label="clip(r, 1−ε, 1+ε)·Â")
    ax.plot(r, objective, color=INK, lw=3.0, alpha=0.85, label="L^CLIP = min(…)  (eq. 5.1)")
    for x in (lo, hi):
        ax.axvline(x, color=GREY, lw=0.8, ls="-.")
    ax.axvline(1.0, color=GREY, lw=0.6)
    ax.axhline(0.0, color=GREY, lw=0.6)
    ymin, ymax = min(unclipped.min(), clipped.min()), max(unclipped.max(), clipped.max())
    pad = 0.08 * (ymax - ymin)
    # Extra room below (Â > 0) or above (Â < 0) the curves for the "gradient flows" label.
    ax.set_ylim(ymin - (3.2 * pad if adv > 0 else pad), ymax + (pad if adv > 0 else 3.2 * pad))
    ax.set_xlim(0, r_max)
    # Labels in axes coordinates, in the empty corner of each region (clear of the curves).
    zero_mid = 0.5 * (start + stop) / r_max
    ax.text(zero_mid, 0.95 if adv > 0 else 0.05, "∇ = 0\n" + ("already increased enough" if adv > 0
            else "already decreased enough"), transform=ax.transAxes, ha="center",
            va="top" if adv > 0 else "bottom", fontsize=9, color=RED)
    flow_mid = (0.5 * lo if adv > 0 else 0.5 * (hi + r_max)) / r_max
    ax.text(flow_mid + (0.08 if adv > 0 else 0.0), 0.03 if adv > 0 else 0.97,
            "∇ = Â·∇r flows\n" + ("(keep pushing r up)" if adv > 0 else "(keep pushing r down)"),
            transform=ax.transAxes, ha="center", va="bottom" if adv > 0 else "top", fontsize=9, color=BLUE)
    ax.set_xticks(sorted({0.0, lo, 1.0, hi, r_max}))
    ax.set_xticklabels([f"{t:g}" if t not in (lo, hi) else (f"1−ε\n={t:g}" if t == lo else f"1+ε\n={t:g}")
                        for t in sorted({0.0, lo, 1.0, hi, r_max})])
    ax.set_xlabel("probability ratio r = π_θ / π_θold")
    ax.set_ylabel("per-token objective")
    ax.set_title(f"Â = {adv:+g} ({'good' if adv > 0 else 'bad'} action)", fontsize=11)
    ax.grid(alpha=0.25)


# ----------------------------------------------------------------------------- 2. one PPO step (fig. 5.1)

# Fig. 5.1's six steps for the book's 70B walkthrough (Book §5.5-5.7, p. 146-147): numbers as the chapter gives them.
WALKTHROUGH_STEPS: tuple[tuple[str, str], ...] = (
    ("1 · Generate", "Llama-3-70B policy answers\n128 prompts, ≤ 512 tokens each\n(temperature 0.7, top-p 0.9)\n"
                     "→ up to ~65K token-level\ntransitions in the buffer"),
    ("2 · Score", "the reward model scores\neach response:\none scalar r_RM per response\n(128 scores)"),
    ("3 · KL", "per-token KL of the policy\nagainst the frozen\nreference policy:\nlog π_θ − log π_ref"),
    ("4 · Final reward", "R = r_RM − 0.05 × mean_KL\nKL penalty subtracted\nfrom the RM score,\non the last token only"),
    ("5 · GAE", "advantages with\nγ = 1.0, λ = 0.95,\nthen whitened to\nzero mean, unit variance"),
    ("6 · Clipped update", "4 epochs × mini-batches of 16\nε = 0.2, lr 1.5e-6,\ngrad-norm clip 1.0\n"
                           "→ purge the buffer"),
)


def ppo_step_walkthrough() -> Figure:
    """One PPO step for a 70B chat model: fig. 5.1's six steps with the chapter's numbers (Book §5.5, p. 146-147).

    Generate → score → KL → final reward → GAE → clipped update, then the
    chapter's payoff line (~0.005 win-rate per step; 5-10% absolute over SFT
    after 10K steps) and a worked example of step 4 with round numbers that
    are marked as illustrative (the chapter gives the formula, not a value).

    Returns:
        A Figure (no axes: a diagram).
    """
    fig = Figure(figsize=(13, 5.4))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, 13)
    ax.set_ylim(0, 5.4)
    ax.axis("off")
    colors = [BLUE, "#9467bd", ORANGE, RED, GREEN, INK]
    w, h, gap = 1.95, 2.05, 0.16
    y = 2.25
    for i, ((head, body), color) in enumerate(zip(WALKTHROUGH_STEPS, colors)):
        x = 0.22 + i * (w + gap)
        ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.02,rounding_size=0.12",
                                    facecolor=color, alpha=0.10, edgecolor=color, lw=1.8))
        ax.text(x + w / 2, y + h - 0.22, head, ha="center", va="top", fontsize=11.5, weight="bold", color=color)
        ax.text(x + w / 2, y + h - 0.62, body, ha="center", va="top", fontsize=8.8, color=INK, linespacing=1.4)
        if i < len(WALKTHROUGH_STEPS) - 1:
            ax.add_patch(FancyArrowPatch((x + w + 0.01, y + h / 2), (x + w + gap - 0.01, y + h / 2),
                                         arrowstyle="-|>", mutation_scale=14, color=GREY, lw=1.4))
    # "repeat" loop from the update back to generation.
    ax.add_patch(FancyArrowPatch((0.22 + 5 * (w + gap) + w / 2, y - 0.06), (0.22 + w / 2, y - 0.06),
                                 connectionstyle="arc3,rad=-0.12", arrowstyle="-|>", mutation_scale=14,
                                 color=GREY, lw=1.2, ls="--"))
    ax.text(6.5, 1.22, "repeat with fresh rollouts: thousands of small, safe steps", ha="center",
            fontsize=9.5, color=GREY, style="italic")
    ax.text(6.5, 0.74, "Payoff (Book §5.5): ~0.005 win-rate per step; after 10K steps, a 5–10% absolute "
                       "improvement over SFT.", ha="center", fontsize=10.5, color=INK)
    r_rm, mean_kl = 2.0, 4.0  # illustrative round numbers, not the book's
    ax.text(6.5, 0.28, f"Worked example of step 4 (illustrative numbers): r_RM = {r_rm:g}, mean_KL = {mean_kl:g} nats "
                       f"→ R = {r_rm:g} − 0.05 × {mean_kl:g} = {r_rm - 0.05 * mean_kl:g}", ha="center", fontsize=9.5,
            color=RED)
    ax.text(6.5, 5.05, "One PPO step for a 70B chat model (Book fig. 5.1, p. 146–147)", ha="center",
            fontsize=13.5, weight="bold", color=INK)
    ax.text(6.5, 4.68, "batch 128 prompts × 512 max tokens · init_kl_coef 0.05 · GAE λ 0.95, γ 1.0 · "
                       "4 epochs × mini-batch 16 · ε 0.2", ha="center", fontsize=9.5, color=GREY)
    return fig


# ----------------------------------------------------------------------------- 3. danger board


class DangerRun(BaseModel):
    """One toy run: its label ("too low", "typical", "too high"), the parameter's value and its per-step stats."""

    model_config = ConfigDict(extra="forbid")

    label: str
    value: float
    steps: list[dict[str, float | None]] = Field(min_length=1, description="ppo-course train's per-step stats")


class DangerData(BaseModel):
    """Input of ``danger_board``: runs differing in one PPOConfig field of the stop-8 table."""

    model_config = ConfigDict(extra="forbid")

    parameter: str
    runs: list[DangerRun] = Field(min_length=1)
    source: str = ""

    @model_validator(mode="after")
    def _known(self) -> "DangerData":
        if self.parameter not in DANGER_TABLE:
            raise ValueError(f"parameter {self.parameter!r} is not in the stop-8 table; one of {sorted(DANGER_TABLE)}")
        return self


# (stat key, panel title, what it shows); the toy task's gold score is a second, hidden judge.
DANGER_PANELS: tuple[tuple[str, str], ...] = (
    ("ppo/mean_scores", "reward-model score (what PPO maximises)"),
    ("toy/gold_score", "gold score (the toy task's true quality)"),
    ("objective/kl", "KL to the SFT reference (nats / sequence)"),
    ("toy/eos_frac", "share of answers that end with EOS"),
)
RUN_COLORS = {"too low": BLUE, "typical": GREEN, "too high": RED}


def danger_board(data: DangerData | dict) -> Figure:
    """The stop-8 danger table for one parameter: toy runs too low / typical / too high (Book §5.9).

    Args:
        data: a ``DangerData`` (or a dict validating as one): each run's per-step stats as
            written by ``ppo-course train`` (keys ``step``, ``ppo/mean_scores``,
            ``toy/gold_score``, ``objective/kl``, ``toy/eos_frac``; a missing key leaves
            that curve out).

    Returns:
        A Figure: four panels (score, gold score, KL, EOS share) against the step, one
        curve per run, under the table's typical value and stated consequence.

    Raises:
        pydantic.ValidationError: if ``data`` does not validate (e.g. a parameter outside the table).
    """
    data = DangerData.model_validate(data)
    typical, effect = DANGER_TABLE[data.parameter]
    fig = Figure(figsize=(12, 6.6), layout="constrained")
    axes = fig.subplots(2, 2, sharex=True).ravel()
    for ax, (key, title) in zip(axes, DANGER_PANELS):
        clipped = False
        for run in data.runs:
            pts = [(row.get("step", i + 1), row.get(key)) for i, row in enumerate(run.steps)]
            pts = [(s, v) for s, v in pts if v is not None and np.isfinite(v)]
            if not pts:
                continue
            s, v = np.array(pts).T
            if key == "objective/kl" and (v < 0).any():
                # TRL's KL is a sample estimate (sum of logp - ref_logp) that can dip below 0 while the KL
                # itself never does: drawn at 0 (and said in the title) rather than as a negative KL.
                v = np.maximum(v, 0.0)
                clipped = True
            ax.plot(s, v, lw=2.0, color=RUN_COLORS.get(run.label, GREY),
                    label=f"{run.label}: {data.parameter} = {run.value:g}")
        ax.set_title(title + ("\n(negative sample estimates drawn at 0)" if clipped else ""), fontsize=10.5)
        ax.grid(alpha=0.25)
        if key == "objective/kl":
            ax.set_yscale("symlog", linthresh=1.0)
            ax.set_ylim(bottom=0.0)  # a KL is never negative
        if key == "toy/eos_frac":
            ax.set_ylim(-0.03, 1.03)
    for ax in axes[2:]:
        ax.set_xlabel("PPO step")
    axes[0].legend(fontsize=9, loc="best", framealpha=0.95)
    fig.suptitle(f"Danger board · {data.parameter} (book's typical {typical}): “{effect}”  (Book §5.9)", fontsize=12.5)
    if data.source:
        fig.supxlabel(data.source, fontsize=8, color=GREY)
    return fig
