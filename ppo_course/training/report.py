"""What ``train --mine`` shows: the two runs in one figure, the last-window means side by side, the JSON log,
and the reference run's cache.

The figure has one panel per watched statistic (``alarms.WATCHED``: reward,
KL, entropy, clip fraction, value loss) against the PPO step, the student's
curve over the reference's, a marker where an alarm went off (matplotlib,
the palette of ``ppo_course.plots``). The table (rich) gives each statistic's
mean over the last ``WINDOW`` steps of both runs. The log has the format of
``ppo-course train``'s ``train_log.json`` (``{"config", "summary", "steps"}``),
plus the reference's steps and the alarms.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path
from typing import Any

from ppo_course.atomic_files import atomic_write_text
from ppo_course.training.alarms import WATCHED, Alarm

__all__ = ["WINDOW", "cache_dir", "cached_reference", "compare_figure", "default_out_dir", "last_window_table",
           "store_reference", "window_means", "write_log"]

#: Steps in the "last window" of the table (fewer when the run is shorter).
WINDOW = 10


def _clean(x: Any) -> Any:
    return None if isinstance(x, float) and not math.isfinite(x) else x


def write_log(path: Path, history: list[dict[str, float]], config: Any, summary: dict[str, Any],
              extra: dict[str, Any] | None = None) -> None:
    """Write a run as JSON, atomically: ``{"config": {...}, "summary": {...}, "steps": [stats, ...], **extra}``.

    Floats as they are, NaN and ±inf as null (``ppo-course train``'s format).
    """
    payload = {"config": config.model_dump(), "summary": {k: _clean(v) for k, v in summary.items()},
               "steps": [{k: _clean(v) for k, v in row.items()} for row in history], **(extra or {})}
    atomic_write_text(path, json.dumps(payload, indent=1))


def default_out_dir() -> Path:
    """``runs/train-<YYYYmmdd-HHMMSS>`` under the current directory (where ``train`` writes by default)."""
    import time

    return Path.cwd() / "runs" / time.strftime("train-%Y%m%d-%H%M%S")


def window_means(history: list[dict[str, float]], window: int = WINDOW) -> dict[str, float]:
    """{stat key: mean over the last ``window`` steps} for each watched statistic (NaN when absent)."""
    tail = history[-window:]
    out = {}
    for key, _ in WATCHED:
        values = [float(r.get(key, math.nan)) for r in tail]
        out[key] = sum(values) / len(values) if values else math.nan
    return out


def last_window_table(mine: list[dict[str, float]], reference: list[dict[str, float]] | None,
                      window: int = WINDOW) -> Any:
    """A ``rich.table.Table``: each watched statistic's last-window mean, the student's run beside the reference's."""
    from rich.table import Table

    n = min(window, len(mine))
    table = Table(title=f"mean of the last {n} step{'s' if n != 1 else ''} (of step {len(mine)})")
    table.add_column("statistic")
    table.add_column("your run", justify="right")
    mine_means = window_means(mine[-n:], n)
    ref_means = window_means(reference[len(mine) - n:len(mine)], n) if reference else None
    if ref_means is not None:
        table.add_column("reference", justify="right")
    for key, label in WATCHED:
        row = [label, f"{mine_means[key]:.4g}"]
        if ref_means is not None:
            row.append(f"{ref_means[key]:.4g}")
        table.add_row(*row)
    return table


def compare_figure(mine: list[dict[str, float]], reference: list[dict[str, float]] | None, alarms: list[Alarm],
                   title: str) -> Any:
    """One matplotlib figure, five panels (``WATCHED``) against step: the student's run and the reference's."""
    from matplotlib.figure import Figure

    from ppo_course.plots import BLUE, GREY, RED

    fig = Figure(figsize=(8, 11))
    axes = fig.subplots(len(WATCHED), 1, sharex=True)
    for ax, (key, label) in zip(axes, WATCHED):
        if reference:
            ax.plot([r["step"] for r in reference], [r.get(key, math.nan) for r in reference], color=GREY,
                    linestyle="--", label="reference")
        ax.plot([r["step"] for r in mine], [r.get(key, math.nan) for r in mine], color=BLUE, label="your run")
        for alarm in alarms:
            ax.axvline(alarm.step, color=RED, linestyle=":", linewidth=1)
            if alarm.statistic == key:
                ax.annotate(alarm.kind, (alarm.step, ax.get_ylim()[1]), color=RED, fontsize=8, va="top")
        ax.set_ylabel(label, fontsize=8)
    axes[0].legend(loc="best", fontsize=8)
    axes[0].set_title(title, fontsize=9)
    axes[-1].set_xlabel("PPO step")
    fig.tight_layout()
    return fig


def cache_dir() -> Path:
    """Where reference runs are cached: ``$PPO_COURSE_CACHE``, else ``$XDG_CACHE_HOME/ppo-course/train``,
    else ``~/.cache/ppo-course/train``."""
    if os.environ.get("PPO_COURSE_CACHE"):
        return Path(os.environ["PPO_COURSE_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ppo-course" / "train"


def _cache_file(config: Any, steps: int, device: str, version: str, folder: Path | None) -> Path:
    key = json.dumps({"config": config.model_dump(), "steps": steps, "device": device.split(":")[0],
                      "version": version}, sort_keys=True)
    return (folder or cache_dir()) / f"reference-{hashlib.sha256(key.encode()).hexdigest()[:24]}.json"


def cached_reference(config: Any, steps: int, device: str, version: str,
                     folder: Path | None = None) -> list[dict[str, float]] | None:
    """The cached reference run for (config incl. seed, steps, device kind, reference version), or None.

    An unreadable or malformed cache file counts as absent.
    """
    path = _cache_file(config, steps, device, version, folder)
    try:
        steps_data = json.loads(path.read_text(encoding="utf-8"))["steps"]
        return [{k: (math.nan if v is None else float(v)) for k, v in row.items()} for row in steps_data]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def store_reference(history: list[dict[str, float]], config: Any, steps: int, device: str, version: str,
                    folder: Path | None = None) -> Path | None:
    """Cache a reference run (atomically); the path, or None when the cache folder cannot be written."""
    path = _cache_file(config, steps, device, version, folder)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps({"steps": [{k: _clean(v) for k, v in r.items()} for r in history]}))
    except OSError:
        return None
    return path
