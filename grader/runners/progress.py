"""The batch's progress bar (rich, on stderr), or a silent stand-in with the same calls."""

from __future__ import annotations


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


def progress_bar(enabled: bool):
    """A rich progress bar on stderr (grading, done/total, ETA, tally), or one that shows nothing."""
    if not enabled:
        return _NoProgress()
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
