"""``ppo-course train --mine``: the toy RLHF run with the student's own ex1–ex7, beside the reference's.

``train_mine`` runs the reference first (or reads its cached run: same config,
seed, steps, device kind and reference version), then the student's pieces
(``pieces.student_pieces``) in the same loop (``loop.run_loop``: same SFT
policy, prompts and generator seeds). While the student's run goes, every
step is watched (``alarms.Alarms``); at the first alarm the step's batch is
replayed with the student's pieces and the reference's
(``ReferenceSide.diagnose``) to name the first piece that differs. An alarm
that stops (NaN/inf, a KL or value loss blow-up, entropy collapse, a clip
fraction stuck at 0 or 1) ends the run there; the first departure from the
reference's curve is a flag, and the run goes on.

Without a reference (the student bundle) the reference's curve is the run
shipped with the bundle for the same config (``shipped``), when there is
one, and at the first alarm the student's public tests name the piece at
fault (``public_check.public_tests_finding``), in ``ppo-course check``'s words.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ppo_course.training.alarms import Alarm, Alarms
from ppo_course.training.diagnosis import Finding
from ppo_course.training.loop import StepInputs, StopRun, run_loop
from ppo_course.training.pieces import ReferenceSide, student_pieces
from ppo_course.training.public_check import PublicFinding, public_tests_finding
from ppo_course.training.report import cached_reference, store_reference

__all__ = ["MineRun", "reference_run", "train_mine"]


@dataclass
class MineRun:
    """The outcome of ``train_mine``.

    Attributes:
        history: the student's run, one stats dict per step taken (``loop.run_loop``).
        reference: the reference run from the same seed (None without a reference).
        alarms: what the watch saw, in order (``alarms.Alarm``).
        findings: the piece named for each alarm that was replayed (``diagnosis.Finding``) or, without a
            reference, what the public tests said at the first alarm (``public_check.PublicFinding``).
        notes: one sentence per piece that ran the reference's in place of a stub.
        never_ran: ``stem.name`` of the student's functions the run never called (``MinePieces.never_ran``).
        stopped: the alarm that stopped the run, or None when it ran all its steps.
        reference_cached: whether the reference run came from the cache.
        reference_shipped: whether the reference run came with the bundle (``shipped.shipped_reference``).
    """

    history: list[dict[str, float]]
    reference: list[dict[str, float]] | None
    alarms: list[Alarm] = field(default_factory=list)
    findings: list[Finding | PublicFinding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    never_ran: list[str] = field(default_factory=list)
    stopped: Alarm | None = None
    reference_cached: bool = False
    reference_shipped: bool = False


def reference_run(reference: ReferenceSide, config: Any, steps: int, *, device: str = "cpu", console: Any = None,
                  show_progress: bool = False, cache: Path | None = None) -> tuple[list[dict[str, float]], bool]:
    """(the reference's run, whether it came from the cache); a fresh run is cached for next time.

    Args:
        cache: the cache folder (None: ``report.cache_dir()``).
    """
    got = cached_reference(config, steps, device, reference.version, cache)
    if got is not None:
        return got, True
    history = reference.run(config, steps, device=device, console=console, show_progress=show_progress)
    store_reference(history, config, steps, device, reference.version, cache)
    return history, False


def _watcher(run: MineRun, alarms: Alarms, reference: ReferenceSide | None, config: Any, mine: Any, say: Any) -> Any:
    """The loop's watcher: check each step; replay the first alarm's step to name the piece; stop on a stop."""

    def watch(record: dict[str, float], inputs: StepInputs) -> None:
        found = alarms.check(record)
        if not found:
            return
        run.alarms.extend(found)
        first = found[0]
        say(f"[bold red]step {first.step}:[/] {first.text}" if first.stops else f"[yellow]step {first.step}:[/] {first.text}")
        if reference is not None and len(run.findings) < 2:
            finding = reference.diagnose(inputs, config, mine)
            run.findings.append(finding)
            say(f"  {finding.words()}", markup=False)
        elif reference is None and not run.findings:
            say("  running your public tests (what ppo-course check runs) to name the piece at fault ...",
                markup=False)
            finding = public_tests_finding(mine.folder, first.step)
            run.findings.append(finding)
            say(f"  {finding.words()}", markup=False)
        if first.stops:
            run.stopped = first
            raise StopRun(first.text)

    return watch


def train_mine(exercises_dir: str | Path, config: Any, steps: int, *, reference: ReferenceSide | None,
               device: str = "cpu", console: Any = None, show_progress: bool = True, log_every: int = 10,
               cache: Path | None = None, shipped: list[dict[str, float]] | None = None) -> MineRun:
    """Run the student's pieces on the toy task beside the reference's run (see the module docstring).

    Args:
        exercises_dir: the student's exercise folder.
        config: the ``PPOConfig`` of both runs (its seed seeds both).
        steps: PPO steps (≥ 1).
        reference: the reference's side (None: the student's run alone; a stub is then an error).
        device: "cpu" or "cuda".
        console: a ``rich.console.Console`` for the progress bars and lines (a new one if None).
        show_progress: draw progress bars.
        log_every: print a stats line every this many steps (0: none).
        cache: the reference runs' cache folder (None: ``report.cache_dir()``).
        shipped: without a reference, the bundle's reference run for this config (``shipped.shipped_reference``),
            drawn and watched beside the student's; at an alarm the public tests name the piece.

    Raises:
        FileNotFoundError: ``exercises_dir`` is not a folder.
        ValueError: steps < 1.
        pieces.MissingPiece: a stub with no reference to fall back to.
        Exception: whatever the student's code raises during the run (it is theirs to see).
    """
    from rich.console import Console

    console = console or Console()
    ref_history, cached = (None, False)
    if reference is not None:
        if not cached_reference(config, steps, device, reference.version, cache):
            console.print("the reference run from the same seed (once; cached for next time) ...")
        ref_history, cached = reference_run(reference, config, steps, device=device, console=console,
                                            show_progress=show_progress, cache=cache)
    elif shipped is not None:
        ref_history = shipped[:steps]
    run = MineRun(history=[], reference=ref_history, reference_cached=cached,
                  reference_shipped=reference is None and ref_history is not None)

    def say(text: str, markup: bool = True) -> None:
        console.print(text, markup=markup, highlight=False, soft_wrap=True)

    with student_pieces(exercises_dir, reference, say=lambda note: say(f"note: {note}", markup=False)) as mine:
        alarms = Alarms(config.target_kl, ref_history)
        run.history = run_loop(config, steps, mine.ppo_step, mine.kl_controller, device=device, log_every=log_every,
                               console=console, show_progress=show_progress,
                               watch=_watcher(run, alarms, reference, config, mine, say), label="yours")
        run.notes = list(mine.notes)
        run.never_ran = mine.never_ran()
    return run
