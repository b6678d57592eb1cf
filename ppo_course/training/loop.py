"""The toy RLHF run, one loop for every PPO step: the reference's (``ppo-course train``) and the student's (``--mine``).

Starts from the toy SFT policy (``ppo_course.toy_task.sft_policy``), keeps a
frozen copy as the KL anchor, and repeats a ``ppo_step`` (exercise 7's
signature, ARCHITECTURE.md "Exercise 7") on batches of toy prompts (Book
fig. 5.1 looped). The step and the KL controller's class are given, so the
same seeds, prompts and bookkeeping drive the reference's pieces and the
student's alike. Before each step a ``StepInputs`` (the policy's weights, the
KL coefficient, the prompts) is kept, so that a watcher can replay the step
that went wrong.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from ppo_course import toy_task
from ppo_course.config import PPOConfig

__all__ = ["COLUMNS", "StepInputs", "StopRun", "run_loop"]

# Columns of the per-step line: (stat key, header, format).
COLUMNS = (
    ("ppo/mean_scores", "score", "{:7.3f}"),
    ("toy/gold_score", "gold", "{:7.3f}"),
    ("objective/kl", "KL", "{:7.2f}"),
    ("objective/kl_coef", "kl_coef", "{:8.4f}"),
    ("ppo/policy/clipfrac", "clipfrac", "{:8.3f}"),
    ("ppo/policy/approx_kl", "approx_kl", "{:9.4f}"),
    ("toy/response_len", "len", "{:5.1f}"),
)


@dataclass
class StepInputs:
    """What one step started from: enough to replay it (exercise 7's harness payload).

    Attributes:
        step: 1-based step number.
        state_dict: the policy's weights before the step ({name: CPU tensor copy}).
        ref_state_dict: the frozen reference policy's weights ({name: CPU tensor}).
        queries: [B, P] long, the step's prompts (CPU).
        kl_coef: the KL controller's ``value`` when the step started (β of Book §5.6).
    """

    step: int
    state_dict: dict[str, torch.Tensor]
    ref_state_dict: dict[str, torch.Tensor]
    queries: torch.Tensor
    kl_coef: float


class StopRun(Exception):
    """Raised by a watcher to end the run after the current step; the steps so far are kept."""


#: Called after each step with (the step's record, the step's inputs); raises ``StopRun`` to end the run.
Watcher = Callable[[dict[str, float], StepInputs], None]


def _cpu_state(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().to("cpu", copy=True) for k, v in module.state_dict().items()}


def _number(value: Any) -> float:
    """A stat as a float (a 0-dim tensor's item); NaN for what is not a number."""
    try:
        return float(value)
    except (TypeError, ValueError, RuntimeError):
        return float("nan")


def _watched(watch: Watcher, record: dict[str, float], inputs: StepInputs) -> bool:
    """Run the watcher on a step; False when it stopped the run (``StopRun``)."""
    try:
        watch(record, inputs)
    except StopRun:
        return False
    return True


def _line(step: int | None, record: dict[str, float]) -> str:
    """The per-step line of ``COLUMNS``; with no step, the progress bar's text (from ``record``) or the header."""
    if step is None and record:
        return f"score {record.get('ppo/mean_scores', math.nan):.3f}  KL {record.get('objective/kl', math.nan):.2f}"
    if step is None:
        return f"{'step':>5}  " + "  ".join(f"{name:>{len(fmt.format(0.0))}}" for _, name, fmt in COLUMNS)
    return f"{step:>5}  " + "  ".join(fmt.format(record.get(key, math.nan)) for key, _, fmt in COLUMNS)


def _progress(console: Any, show: bool, label: str) -> Any:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    return Progress(TextColumn(f"[bold]{label}[/] step"), MofNCompleteColumn(), BarColumn(), TextColumn("{task.description}"),
                    TimeElapsedColumn(), TimeRemainingColumn(), console=console, disable=not show, transient=False)


def _setting(config: PPOConfig, device: str | torch.device, kl_controller: type) -> tuple:
    """(policy, frozen reference, Adam, KL controller, step generator, prompt generator) of a run, all seeded."""
    device = torch.device(device)
    ref_policy = toy_task.sft_policy(seed=config.seed, device=device).requires_grad_(False)
    policy = toy_task.sft_policy(seed=config.seed, device=device)
    optimizer = torch.optim.Adam(policy.parameters(), lr=config.learning_rate)
    kl_ctl = kl_controller(config.init_kl_coef, config.target_kl, config.kl_horizon)
    return (policy, ref_policy, optimizer, kl_ctl, torch.Generator().manual_seed(config.seed),
            torch.Generator().manual_seed(config.seed + 1))


def run_loop(config: PPOConfig, steps: int, ppo_step: Callable[..., dict[str, float]], kl_controller: type, *,
             device: str | torch.device = "cpu", log_every: int = 10, console: Any = None, show_progress: bool = True,
             watch: Watcher | None = None, label: str = "PPO") -> list[dict[str, float]]:
    """Run up to ``steps`` PPO steps on the toy task and return one stats dict per step taken.

    Seeding: ``config.seed`` seeds the SFT policy, the step's generator (sampling and mini-batch
    order) and, with seed + 1, the prompts' generator. Bit-for-bit repeatable on CPU.

    Args:
        config: a ``PPOConfig`` (usually ``PPOConfig.toy(...)``).
        steps: number of PPO steps (≥ 1).
        ppo_step: exercise 7's ``ppo_step(policy, ref_policy, optimizer, queries, reward_fn, kl_ctl, config,
            generator) -> dict[str, float]``.
        kl_controller: ``AdaptiveKLController``'s class (called ``(init_kl_coef, target_kl, kl_horizon)``).
        device: where the policies live ("cpu" or "cuda").
        log_every: print a line every this many steps (and the first and last); 0 = never.
        console: a ``rich.console.Console`` (a new one if None).
        show_progress: draw a rich progress bar; label: its first word.
        watch: called after each step with (record, inputs); a ``StopRun`` it raises ends the run there.

    Returns:
        A list of dicts of floats: ``step`` (1-based) and every key of ``ppo_step``'s stats and of
        ``toy_task.response_stats``; shorter than ``steps`` when the watcher stopped the run.

    Raises:
        ValueError: if steps < 1. Whatever ``ppo_step`` raises.
    """
    from rich.console import Console

    if steps < 1:
        raise ValueError(f"train: steps must be ≥ 1, got {steps}")
    console = console or Console()
    policy, ref_policy, optimizer, kl_ctl, generator, prompt_generator = _setting(config, device, kl_controller)
    ref_state = _cpu_state(ref_policy) if watch is not None else {}
    rollout: dict[str, float] = {}

    def reward_fn(responses: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        # Called once per step on the fresh rollout: note its monitoring numbers too.
        rollout.update(toy_task.response_stats(responses, mask))
        return toy_task.score(responses, mask)

    history: list[dict[str, float]] = []
    with _progress(console, show_progress, label) as progress:
        task = progress.add_task("", total=steps)
        if log_every:
            progress.console.print(_line(None, {}))
        for step in range(1, steps + 1):
            queries = toy_task.sample_queries(config.batch_size, prompt_generator)
            inputs = StepInputs(step, _cpu_state(policy), ref_state, queries.clone(), float(kl_ctl.value)) \
                if watch is not None else None
            stats = ppo_step(policy, ref_policy, optimizer, queries, reward_fn, kl_ctl, config, generator)
            record = {"step": float(step), **{str(k): _number(v) for k, v in stats.items()}, **rollout}
            history.append(record)
            progress.update(task, advance=1, description=_line(None, record))
            if log_every and (step == 1 or step == steps or step % log_every == 0):
                progress.console.print(_line(step, record))
            if watch is not None and not _watched(watch, record, inputs):
                break
    return history
