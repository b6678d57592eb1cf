"""Red team 11: the graders' store on disk (`grader.hidden.disk_cache`) against the TA's own files and a changed
runtime.

- Its root may be any folder the TA names (``$PPO_COURSE_GRADER_CACHE_DIR``): pruning old grader versions
  must remove only the store's own version folders, never the TA's folders beside them (an earlier store
  removed every sub-folder of the root past the four most recently used: ``~/.cache`` lost pip's, torch's ...).
- The grader's fingerprint hashes sources only: a value computed under another torch, numpy, hypothesis or
  interpreter (an upgrade, or a store shared by machines of another kind) must be computed again, never read.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import torch

from grader.hidden import cache, disk_cache


@pytest.fixture()
def store(tmp_path, monkeypatch):
    """A switched-on store in a fresh private root, and empty memory caches."""
    root = tmp_path / "store"
    root.mkdir(mode=0o700)
    monkeypatch.delenv("PPO_COURSE_NO_GRADER_CACHE", raising=False)
    monkeypatch.setenv(disk_cache.CACHE_DIR_ENV, str(root))
    cache.clear()
    disk_cache.switch_off()
    disk_cache.switch_on()
    yield root
    disk_cache.switch_off()
    disk_cache.runtime_identity.cache_clear()
    cache.clear()


def _old(folder: Path, stamp: int) -> Path:
    folder.mkdir(mode=0o700)
    (folder / "file").write_text("the TA's own")
    os.utime(folder, (stamp, stamp))
    return folder


def test_pruning_spares_the_folders_a_ta_keeps_beside_the_store(store):
    ta_folders = [_old(store / name, 1000 + i) for i, name in
                  enumerate(["pip", "huggingface", "torch", "thesis", "submissions_2025"])]
    # Named like a version folder, but holding a file the store never writes: not the store's either.
    lookalike = _old(store / ("ab" * 16), 999)
    for i in range(5):  # the store's own old versions: only these may go
        version = store / f"{i:032x}"
        version.mkdir(mode=0o700)
        (version / ("0" * 64)).write_bytes(b"x")
        os.utime(version, (2000 + i, 2000 + i))
    cache.cached("reference_call", ("f", 1), lambda: torch.zeros(2), persist=True)
    for folder in [*ta_folders, lookalike]:
        assert (folder / "file").read_text() == "the TA's own", f"{folder.name} was removed by the store's pruning"
    versions = [p for p in store.iterdir() if re.fullmatch(r"[0-9a-f]{32}", p.name) and p != lookalike]
    assert len(versions) == disk_cache.KEEP_VERSIONS  # the current one and the three most recent old ones


@pytest.mark.parametrize("module", ["torch", "numpy", "hypothesis"])
def test_a_value_from_another_runtime_is_computed_again(store, monkeypatch, module):
    cache.cached("reference_call", ("f", torch.ones(3)), lambda: torch.full((3,), 7.0), persist=True)
    cache.clear()  # a fresh process
    upgraded = __import__(module)
    monkeypatch.setattr(upgraded, "__version__", "999.0.0-upgraded")
    disk_cache.runtime_identity.cache_clear()
    calls = []
    got = cache.cached("reference_call", ("f", torch.ones(3)),
                       lambda: calls.append(1) or torch.full((3,), 8.0), persist=True)
    assert calls == [1], f"a value computed under another {module} was read from the store"
    assert torch.equal(got, torch.full((3,), 8.0))
    # Back on the first runtime, its own value is read again (bit for bit), not the other runtime's.
    monkeypatch.undo()
    monkeypatch.delenv("PPO_COURSE_NO_GRADER_CACHE", raising=False)
    monkeypatch.setenv(disk_cache.CACHE_DIR_ENV, str(store))
    disk_cache.runtime_identity.cache_clear()
    cache.clear()
    again = cache.cached("reference_call", ("f", torch.ones(3)), lambda: pytest.fail("computed again"), persist=True)
    assert torch.equal(again, torch.full((3,), 7.0))
