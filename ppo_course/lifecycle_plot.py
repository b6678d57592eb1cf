"""The rollout-buffer lifecycle figure (matplotlib, Agg backend): the ratio r over collect → train → purge cycles.

``buffer_lifecycle`` draws the spread of the ratio r over the mini-batch updates
of a few collect → train → purge cycles: it starts at exactly 1.0, drifts over
the K epochs, and resets after the purge (Book §5.5.1-5.5.3 and table 5.1 of
§5.7). It takes the per-mini-batch statistics as data (``LifecycleData``): this
module never runs PPO (``grader.figure_runs.lifecycle_data`` computes them on an
instructor's install). The chapter's other figures and ``save`` are in
``ppo_course.plots``, whose palette this one shares.
Student-side module: it imports torch-free plotting code only, never ``ppo_reference``.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from pydantic import BaseModel, ConfigDict, Field, model_validator

from ppo_course.plots import BLUE, GREEN, GREY, INK, ORANGE, RED

__all__ = ["buffer_lifecycle", "LifecycleData", "MinibatchRatioStats"]


class MinibatchRatioStats(BaseModel):
    """Statistics of r = exp(logp_new − logp_old) over the real tokens of one mini-batch, before its update."""

    model_config = ConfigDict(extra="forbid")

    cycle: int = Field(ge=0, description="collect → train → purge cycle (one PPO step)")
    epoch: int = Field(ge=0, description="epoch within the cycle, 0 .. ppo_epochs−1")
    minibatch: int = Field(ge=0, description="mini-batch within the epoch")
    ratio_min: float
    ratio_p10: float
    ratio_median: float
    ratio_p90: float
    ratio_max: float
    clipfrac: float = Field(ge=0.0, le=1.0, description="share of tokens where the clip binds")

    @model_validator(mode="after")
    def _ordered(self) -> "MinibatchRatioStats":
        q = [self.ratio_min, self.ratio_p10, self.ratio_median, self.ratio_p90, self.ratio_max]
        if any(not np.isfinite(v) or v <= 0 for v in q) or q != sorted(q):
            raise ValueError(f"ratio statistics must be positive, finite and ordered min ≤ p10 ≤ median ≤ p90 ≤ max, got {q}")
        return self


class LifecycleData(BaseModel):
    """Input of ``buffer_lifecycle``: per-mini-batch ratio statistics of consecutive cycles, in order."""

    model_config = ConfigDict(extra="forbid")

    clip_eps: float = Field(0.2, gt=0.0, lt=1.0)
    ppo_epochs: int = Field(ge=1)
    source: str = Field("", description="what produced the numbers (shown in the figure)")
    minibatches: list[MinibatchRatioStats] = Field(min_length=1)


def buffer_lifecycle(data: LifecycleData | dict) -> Figure:
    """The ratio's spread across collect → train → purge cycles (Book §5.5, table 5.1 of §5.7).

    Each point is one mini-batch, measured just before its update: the first
    mini-batch of a cycle has r = 1.0 exactly (θ and θ_old are the same copy),
    then the spread widens over the K epochs as θ drifts from θ_old, the clip
    band 1 ± ε catches the tails, and after the purge the next cycle starts
    from 1.0 again.

    Args:
        data: a ``LifecycleData`` (or a dict validating as one, e.g. from JSON).

    Returns:
        A Figure: ratio band (min-max, p10-p90, median) per mini-batch over the
        cycles, and the clip fraction below it.

    Raises:
        pydantic.ValidationError: if ``data`` does not follow ``LifecycleData``.
    """
    data = LifecycleData.model_validate(data)
    mbs = data.minibatches
    get = lambda name: np.array([getattr(m, name) for m in mbs])  # noqa: E731
    fig = Figure(figsize=(11, 5.6), layout="constrained")
    ax, ax_clip = fig.subplots(2, 1, sharex=True, height_ratios=[3, 1])
    lo, hi = 1 - data.clip_eps, 1 + data.clip_eps
    ax.axhspan(lo, hi, color=GREEN, alpha=0.08, lw=0, label=f"clip band 1 ± ε (ε = {data.clip_eps:g})")
    for y in (lo, hi):
        ax.axhline(y, color=GREEN, lw=0.9, ls="--")
    ax.axhline(1.0, color=GREY, lw=0.8)
    cycles = get("cycle")
    _draw_cycles(ax, ax_clip, get, cycles)
    _mark_boundaries(ax, ax_clip, cycles, get("epoch"), data)
    _scale_and_label(ax, ax_clip, get, data)
    title = "Rollout-buffer lifecycle: r drifts from 1.0 over K epochs, then resets after the purge (Book §5.5, §5.7)"
    fig.suptitle(title, fontsize=12)
    if data.source:
        ax.set_title(data.source, fontsize=8, color=GREY, loc="right")
    return fig


def _draw_cycles(ax, ax_clip, get, cycles: np.ndarray) -> None:
    """Per cycle: the min-max and p10-p90 bands and the median of r on ``ax``, the clip fraction's bars on ``ax_clip``."""
    x = np.arange(len(cycles))
    for c in np.unique(cycles):
        sel = cycles == c
        xs = x[sel]
        ax.fill_between(xs, get("ratio_min")[sel], get("ratio_max")[sel], color=BLUE, alpha=0.15, lw=0,
                        label="min – max" if c == cycles[0] else None, step="mid")
        ax.fill_between(xs, get("ratio_p10")[sel], get("ratio_p90")[sel], color=BLUE, alpha=0.35, lw=0,
                        label="10th – 90th percentile" if c == cycles[0] else None, step="mid")
        ax.plot(xs, get("ratio_median")[sel], color=BLUE, lw=1.8, drawstyle="steps-mid",
                label="median" if c == cycles[0] else None)
        ax_clip.bar(xs, get("clipfrac")[sel], color=ORANGE, width=0.8)


def _mark_boundaries(ax, ax_clip, cycles: np.ndarray, epochs: np.ndarray, data: LifecycleData) -> None:
    """A red line (and note) at each purge, a dotted one at each epoch boundary, and each cycle's caption."""
    for i in range(1, len(cycles)):
        if cycles[i] != cycles[i - 1]:
            for a in (ax, ax_clip):
                a.axvline(i - 0.5, color=RED, lw=2.0)
            ax.annotate("purge → fresh rollout:\nr = 1.0 again", xy=(i - 0.5, 1 - data.clip_eps), xytext=(5, -4),
                        textcoords="offset points", color=RED, fontsize=8.5, va="top")
        elif epochs[i] != epochs[i - 1]:
            for a in (ax, ax_clip):
                a.axvline(i - 0.5, color=GREY, lw=0.8, ls=":")
    for c in np.unique(cycles):
        sel = np.flatnonzero(cycles == c)
        ax.text(sel.mean(), 0.97, f"cycle {int(c) + 1}: collect → {data.ppo_epochs} epochs → purge",
                transform=ax.get_xaxis_transform(), ha="center", va="top", fontsize=9, color=INK)


def _scale_and_label(ax, ax_clip, get, data: LifecycleData) -> None:
    """The y ranges (r scaled to the 10th-90th percentiles and the clip band), the legend, labels and grids."""
    # Scale to the 10th-90th percentiles and the clip band: a few tokens' extreme ratios (the min-max
    # band) would otherwise flatten everything; the largest one is named instead.
    spread = max(abs(get("ratio_p90").max() - 1), abs(1 - get("ratio_p10").min()), data.clip_eps)
    top, bottom = 1 + 1.9 * spread, max(0.0, 1 - 1.6 * spread)
    ax.set_ylim(bottom, top)
    largest = float(get("ratio_max").max())
    if largest > top:  # name the off-scale extreme in the legend rather than over the data
        handles, labels = ax.get_legend_handles_labels()
        ax.legend(handles, [f"min – max (largest r = {largest:.3g}, off scale)" if lab == "min – max" else lab
                            for lab in labels], loc="lower left", fontsize=8.5, ncol=4, framealpha=0.95)
    else:
        ax.legend(loc="lower left", fontsize=8.5, ncol=4, framealpha=0.95)
    ax.set_ylabel("ratio r = π_θ / π_θold\n(per token, real tokens)")
    ax.grid(alpha=0.2, axis="y")
    ax_clip.set_ylabel("clipfrac")
    ax_clip.set_xlabel("mini-batch update (dotted lines: epoch boundaries; red: purge)")
    ax_clip.set_ylim(0, max(0.05, 1.2 * get("clipfrac").max()))
    ax_clip.grid(alpha=0.2, axis="y")
