"""Fixtures of the sandbox tests: one shared fork server, submissions written from strings."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest
import torch

from grader.sandbox import ForkServerClient, Limits, Sandbox

torch.set_num_threads(1)

#: Tight limits so that failure tests stay fast.
FAST = Limits(call_timeout_s=5.0, import_timeout_s=5.0)


@pytest.fixture(scope="session")
def server() -> ForkServerClient:
    """The process-wide fork server (started once per test session)."""
    return ForkServerClient.shared()


def write_submission(root: Path, files: dict[str, str]) -> Path:
    """Write ``{relative path: source}`` (dedented) under ``root``; returns ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    for rel, source in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
    return root


@pytest.fixture
def submission(tmp_path: Path):
    """``submission({"ex4_gae.py": "..."})`` → a submission folder of one student."""
    def make(files: dict[str, str], name: str = "student") -> Path:
        return write_submission(tmp_path / "submissions" / name, files)

    return make


@pytest.fixture
def load(submission, server):
    """``load({"m.py": src}, "m", limits=...)`` → a RemoteModule; its Sandbox is closed after the test."""
    boxes: list[Sandbox] = []

    def make(files: dict[str, str], module: str, limits: Limits = FAST, **kwargs):
        sb = Sandbox(submission(files), limits=limits, server=server, **kwargs)
        boxes.append(sb)
        return sb.load(module)

    yield make
    for sb in boxes:
        sb.close()


def sandbox_processes() -> list[tuple[int, int, str]]:
    """(pid, uid, state) of every process running under a sandbox uid (61000-61999)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            uid = os.stat(f"/proc/{entry}").st_uid
            with open(f"/proc/{entry}/stat", "rb") as fh:
                data = fh.read()
            state = data[data.rindex(b")") + 2 :].split()[0].decode()
        except (OSError, ValueError):
            continue
        if 61000 <= uid < 62000:
            out.append((int(entry), uid, state))
    return out
