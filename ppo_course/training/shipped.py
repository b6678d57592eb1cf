"""The reference runs that ship in the student bundle: per-step statistics only, no weights, no code.

``ppo-course release`` (instructor side) runs the reference's training for a
few configs (``grader.platforms.release``) and writes their per-step records
(the ``steps`` of ``ppo-course train``'s ``train_log.json``: reward, KL,
entropy, clip fraction, value loss, ...) into ``reference_runs.json`` beside
this module. In the bundle, ``train --mine`` reads them (``shipped_reference``)
to draw the reference's curve beside the student's when the student's flags
give the same ``PPOConfig`` (seed included) and no more steps than were
shipped: the loop's step n depends only on the steps before it, so the first
n records of a longer run are the run of n steps. The runs are CPU runs.

File format: ``{"runs": [{"config": PPOConfig.model_dump(), "steps": [{stat: float | null}, ...]}, ...]}``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ppo_course.atomic_files import atomic_write_text

__all__ = ["SHIPPED_FILE", "shipped_reference", "shipped_runs", "write_shipped"]

#: Where the bundle's reference runs are (absent outside a bundle).
SHIPPED_FILE = Path(__file__).resolve().with_name("reference_runs.json")


def shipped_runs(path: Path | None = None) -> list[dict[str, Any]]:
    """The shipped runs, ``[{"config": dict, "steps": [dict of float]}]`` (NaN for null); [] when none or unreadable."""
    try:
        runs = json.loads((path or SHIPPED_FILE).read_text(encoding="utf-8"))["runs"]
        return [{"config": dict(r["config"]),
                 "steps": [{k: (math.nan if v is None else float(v)) for k, v in row.items()} for row in r["steps"]]}
                for r in runs]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return []


def shipped_reference(config: Any, steps: int, device: str = "cpu",
                      path: Path | None = None) -> list[dict[str, float]] | None:
    """The first ``steps`` records of a shipped run with exactly ``config`` (a ``PPOConfig``), or None.

    None as well when the device is not the CPU (the shipped runs are CPU runs; another device's rounding
    departs from them) or every matching run is shorter than ``steps``.
    """
    if device.split(":")[0] != "cpu":
        return None
    want = config.model_dump()
    for run in shipped_runs(path):
        if run["config"] == want and len(run["steps"]) >= steps:
            return run["steps"][:steps]
    return None


def write_shipped(path: Path, runs: list[tuple[Any, list[dict[str, float]]]]) -> None:
    """Write ``[(PPOConfig, history)]`` as the shipped file (atomically; NaN and ±inf as null)."""
    def clean(v: Any) -> Any:
        return None if isinstance(v, float) and not math.isfinite(v) else v

    payload = {"runs": [{"config": config.model_dump(), "steps": [{k: clean(v) for k, v in row.items()}
                                                                  for row in history]}
                        for config, history in runs]}
    atomic_write_text(path, json.dumps(payload))
