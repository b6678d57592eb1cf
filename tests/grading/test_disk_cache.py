"""The graders' store on disk (`grader.hidden.disk_cache`): read back bit for bit, never a file it did not sign,
never a student's weights, never outside a grader process, never a folder others may read."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from grader.hidden import cache, disk_cache
from grader.hidden.ex7_payload import initial_state, is_drawn_state, perturbed

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def store(tmp_path, monkeypatch):
    """A switched-on store in a fresh root, and empty memory caches."""
    monkeypatch.delenv("PPO_COURSE_NO_GRADER_CACHE", raising=False)
    monkeypatch.setenv(disk_cache.CACHE_DIR_ENV, str(tmp_path / "store"))
    cache.clear()
    disk_cache.switch_off()
    disk_cache.switch_on()
    yield tmp_path / "store"
    disk_cache.switch_off()
    cache.clear()


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


def _raises():
    raise AssertionError("computed, though the store holds the value")


def _weird() -> dict:
    # NaN with a payload, -0.0, a denormal and an int tensor: only an exact round trip keeps them all.
    x = torch.tensor([float("nan"), -0.0, 1e-45, 3.25], dtype=torch.float32)
    x.view(torch.int32)[0] = 0x7FC00123
    return {"x": x, "n": torch.arange(5), "s": "text", "f": 0.1}


def test_a_value_computed_in_one_process_is_read_back_bit_for_bit(store):
    first = cache.cached("reference_call", ("f", torch.ones(3)), _weird, persist=True)
    assert len(_files(store)) == 1
    cache.clear()  # what a fresh process has: nothing in memory
    again = cache.cached("reference_call", ("f", torch.ones(3)), _raises, persist=True)
    assert again["x"].numpy().tobytes() == first["x"].numpy().tobytes()
    assert torch.equal(again["n"], first["n"]) and again["s"] == "text" and again["f"] == 0.1
    assert cache.stats()["disk_hits"] == 1 and cache.stats()["misses"] == 0


def test_without_persist_or_switched_off_nothing_is_written(store):
    cache.cached("ex7", ("student weights", torch.ones(3)), _weird)  # persist defaults to False
    disk_cache.switch_off()
    cache.cached("reference_call", ("f", torch.ones(3)), _weird, persist=True)
    assert _files(store) == []


class _Bomb:
    """Unpickling this would create a marker file: a store that unpickled an unsigned file would show it."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (Path(self.marker),))


@pytest.mark.parametrize("how", ["forged", "flipped byte", "moved to another name", "cut short"])
def test_a_file_the_grader_did_not_sign_is_never_unpickled(store, tmp_path, how):
    cache.cached("reference_call", ("f", torch.ones(3)), _weird, persist=True)
    cache.cached("reference_call", ("g", torch.ones(3)), _weird, persist=True)
    target, other = _files(store)
    marker = tmp_path / "unpickled"
    if how == "forged":  # right magic, a made-up tag, a pickle that would act when loaded
        target.write_bytes(disk_cache.MAGIC + b"\0" * 32 + pickle.dumps(_Bomb(str(marker))))
    elif how == "flipped byte":
        raw = bytearray(target.read_bytes())
        raw[-3] ^= 1
        target.write_bytes(bytes(raw))
    elif how == "moved to another name":
        os.replace(other, target)
    else:
        target.write_bytes(target.read_bytes()[:40])
    cache.clear()
    calls = []

    def compute():
        calls.append(1)
        return _weird()

    cache.cached("reference_call", ("f", torch.ones(3)), compute, persist=True)
    cache.cached("reference_call", ("g", torch.ones(3)), compute, persist=True)
    assert not marker.exists()
    assert calls, "a file that failed its tag was used instead of computing"


def test_another_grader_version_has_its_own_folder(store, monkeypatch):
    cache.cached("reference_call", ("f", torch.ones(3)), _weird, persist=True)
    monkeypatch.setattr(cache, "version_key", lambda: b"another grader version or course secret")
    calls = []
    cache.clear()
    cache.cached("reference_call", ("f", torch.ones(3)), lambda: calls.append(1) or _weird(), persist=True)
    assert calls == [1]
    assert len([p for p in store.iterdir() if p.is_dir()]) == 2


def test_a_folder_others_may_read_is_not_used(store, capsys):
    store.mkdir(parents=True)
    store.chmod(0o755)  # the hidden inputs' answers would be readable by every user of the machine
    cache.cached("reference_call", ("f", torch.ones(3)), _weird, persist=True)
    assert _files(store) == []
    assert "not a private folder" in capsys.readouterr().err


def test_writes_stop_at_the_byte_bound(store, monkeypatch):
    monkeypatch.setattr(disk_cache, "MAX_BYTES", 1500)
    for i in range(5):
        cache.cached("reference_call", ("f", i), lambda: torch.zeros(100), persist=True)  # ~600 bytes pickled
    assert 1 <= len(_files(store)) <= 2


def test_old_version_folders_are_pruned(store, monkeypatch):
    store.mkdir(mode=0o700, parents=True)
    names = [f"{i:032x}" for i in range(6)]  # named as the store names its version folders
    for i, name in enumerate(names):
        old = store / name
        old.mkdir(mode=0o700)
        os.utime(old, (1000 + i, 1000 + i))
    cache.cached("reference_call", ("f", 1), lambda: torch.zeros(2), persist=True)
    kept = sorted(p.name for p in store.iterdir())
    assert len(kept) == disk_cache.KEEP_VERSIONS
    assert set(names[3:]) <= set(kept)


def test_only_drawn_initial_weights_count_as_hidden(store):
    state = initial_state(12345)
    assert is_drawn_state(state)
    assert is_drawn_state({k: v.clone() for k, v in state.items()})  # the same bytes
    assert not is_drawn_state(perturbed(state, 1e-6, 1))  # a student's step: other weights
    moved = {k: v.clone() for k, v in state.items()}
    next(iter(moved.values())).view(-1)[0] += 1e-3
    assert not is_drawn_state(moved)


def _grade(out: Path, env: dict) -> dict:
    cmd = [sys.executable, "-m", "ppo_course.cli", "grade", str(ROOT / "examples/cohort/submissions/chen"),
           "--out", str(out / "results.json"), "--feedback", str(out / "feedback.md"), "--profile", "fast",
           "--exercises", "ex2_clipped_loss,ex4_gae", "--quiet"]
    subprocess.run(cmd, check=True, env=env, cwd=out.parent, timeout=600)
    result = json.loads((out / "results.json").read_text())
    result.get("extra_data", {}).pop("timing", None)
    return result


def test_a_grade_from_the_store_is_the_grade_computed(tmp_path):
    env = {**os.environ, disk_cache.CACHE_DIR_ENV: str(tmp_path / "store")}
    env.pop("PPO_COURSE_NO_GRADER_CACHE", None)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = _grade(tmp_path / "a", env)
    written = _files(tmp_path / "store")
    assert len(written) > 20  # the reference's answers and hypothesis' examples of two exercises
    second = _grade(tmp_path / "b", env)
    assert second == first
    assert (tmp_path / "a/feedback.md").read_bytes() == (tmp_path / "b/feedback.md").read_bytes()
    assert _files(tmp_path / "store") == written  # every entry was read back, none computed again
