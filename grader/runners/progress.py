"""The batch's progress: a rich bar on a terminal, plain lines in a log (CI, ``> log``), or nothing."""

from __future__ import annotations

import sys
import time


class _NoProgress:
    def __init__(self, *a, **k) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None

    def add_task(self, *a, **k) -> int:
        return 0

    def update(self, *a, **k) -> None:
        pass

    def advance(self, *a, **k) -> None:
        pass


class LogProgress(_NoProgress):
    """Progress for a log: one plain line on stderr at the first student, then at most every ``every_s``
    seconds, and at the end ("grading: 5/16 done, failed 0 · timed out 0, 31 s"), so that a long batch
    written to a file shows it is alive; the same calls as rich's ``Progress``.

    Args:
        every_s: the least number of seconds between two lines (the last line is always written).
        stream: where the lines go (default: ``sys.stderr`` at the time of the call).
    """

    def __init__(self, every_s: float = 15.0, stream=None) -> None:
        self.every_s = every_s
        self.stream = stream
        self.total = self.done = 0
        self.tally = ""
        self.started = self.last = 0.0
        self.pending = False  # a student finished since the last line

    def __enter__(self):
        self.started = time.monotonic()
        return self

    def __exit__(self, *exc) -> None:
        if self.pending:
            self._say()

    def add_task(self, *a, total: int = 0, completed: int = 0, tally: str = "", **k) -> int:
        self.total, self.done, self.tally = total, completed, tally
        return 0

    def update(self, task: int = 0, *, advance: int = 0, tally: str | None = None, **k) -> None:
        self.done += advance
        self.tally = self.tally if tally is None else tally
        now = time.monotonic()
        self.pending = True
        if self.last == 0.0 or now - self.last >= self.every_s:
            self._say()
            self.last = now
            self.pending = False

    def _say(self) -> None:
        tally = f", {self.tally}" if self.tally else ""
        print(f"grading: {self.done}/{self.total} done{tally}, {time.monotonic() - self.started:.0f} s",
              file=self.stream or sys.stderr, flush=True)


def progress_bar(enabled: bool):
    """A rich progress bar on stderr (grading, done/total, ETA, tally) on a terminal; plain lines
    (:class:`LogProgress`) when stderr is not a terminal; nothing when not ``enabled``."""
    if not enabled:
        return _NoProgress()
    if not sys.stderr.isatty():
        return LogProgress()
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return Progress(
        TextColumn("[bold]grading"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[tally]}"),
        console=Console(stderr=True),
        transient=False,
    )


def tally_words(tally: dict[str, int]) -> str:
    """The progress bar's counts: "rejected 1 · timed out 0 · grader faults 0" (a rejected submission is the
    student's, a grader fault the grader's: never one count)."""
    return (f"rejected {tally['rejected']} · timed out {tally['timed-out']} · "
            f"grader faults {tally['grader_fault']}")

