"""The grading process's long-lived heap: imported with the collector off, then frozen, once per process.

By the end of its first grading session's collection a grader process holds some 200,000 objects that live
as long as it does (torch, pytest, hypothesis, the graders), and every full collection walked them again:
one ``ppo-course grade`` made 7 full collections (three during ``import torch``, one that hypothesis'
``register_random`` asks for at collection), 0.67 of its 0.86 CPU-s of garbage collection (measured with
``gc.callbacks``). ``gc.freeze()`` moves the objects alive at that moment to the permanent generation, which
collections skip; objects made later are collected as before. Only the first session of a process freezes:
a warm worker's later sessions leave their objects to the collector (freezing each session would keep
its cycles for ever).
"""

from __future__ import annotations

import contextlib
import gc
from typing import Iterator

_sessions = 0


@contextlib.contextmanager
def imports_unwatched() -> Iterator[None]:
    """Run the body (the grader's heavy imports) with the collector off; on leaving, turn it back on (when it
    was on) and, before this process's first grading session, freeze what is alive."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if _sessions == 0:
            gc.freeze()
        if was_on:
            gc.enable()


class FreezeAfterImports:
    """A pytest plugin for the grading session: in the first session of this process, ``gc.freeze()`` when it
    is configured (pytest and the sandbox imported) and again when it has collected its tests (the test
    modules, hypothesis and the graders imported)."""

    def pytest_configure(self, config) -> None:
        """Count the session; freeze the heap when it is this process's first."""
        global _sessions
        _sessions += 1
        if _sessions == 1:
            gc.freeze()

    def pytest_collection_finish(self, session) -> None:
        """Freeze the heap again after the first session's collection."""
        if _sessions == 1:
            gc.freeze()
