"""grader/heap.py: the grader's heavy imports run with the collector off, and only a process's first grading
session freezes the heap (a warm worker's later sessions leave their objects to the collector)."""

from __future__ import annotations

import gc

import pytest

from grader import heap


@pytest.fixture
def collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    (gc.enable if was else gc.disable)()


def _fresh_objects(n: int = 1000) -> list:
    return [[i] for i in range(n)]  # n + 1 tracked containers, none frozen yet


def test_imports_unwatched_turns_the_collector_off_then_on_and_freezes_before_the_first_session(monkeypatch,
                                                                                                 collector_on):
    monkeypatch.setattr(heap, "_sessions", 0)
    before = gc.get_freeze_count()
    with heap.imports_unwatched():
        assert not gc.isenabled()
        kept = _fresh_objects()
    assert gc.isenabled()
    assert gc.get_freeze_count() >= before + len(kept)  # the 1000 lists alive at the freeze, at least


def test_a_later_session_freezes_nothing_and_a_collector_left_off_stays_off(monkeypatch, collector_on):
    monkeypatch.setattr(heap, "_sessions", 1)
    before = gc.get_freeze_count()
    gc.disable()
    with heap.imports_unwatched():
        kept = _fresh_objects()
    assert not gc.isenabled()
    assert gc.get_freeze_count() == before
    assert len(kept) == 1000


def test_the_plugin_freezes_in_the_first_session_only(monkeypatch):
    monkeypatch.setattr(heap, "_sessions", 0)
    plugin = heap.FreezeAfterImports()
    before = gc.get_freeze_count()
    plugin.pytest_configure(None)
    kept = _fresh_objects()
    plugin.pytest_collection_finish(None)
    first = gc.get_freeze_count()
    assert first >= before + len(kept)
    plugin.pytest_configure(None)  # a second session of the same process (a warm worker's next student)
    kept += _fresh_objects()
    plugin.pytest_collection_finish(None)
    assert gc.get_freeze_count() == first
