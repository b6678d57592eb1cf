"""Fixtures of the sandbox tests: one shared fork server, submissions written from strings."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
import torch

from grader.sandbox import ForkServerClient, Limits, Sandbox
from sandbox_helpers import FAST, write_submission

torch.set_num_threads(1)



@pytest.fixture(scope="session")
def server() -> ForkServerClient:
    """The process-wide fork server (started once per test session; other processes may connect)."""
    return ForkServerClient.shared(share=True)


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


@pytest.fixture
def folder_outside_tmp():
    """A scratch folder outside /tmp and the home folder (both are hidden for other reasons)."""
    import shutil

    for base in ("/srv", "/mnt", "/opt"):
        if os.path.isdir(base) and os.access(base, os.W_OK):
            path = Path(tempfile.mkdtemp(prefix="ppo-sandbox-test-", dir=base))
            os.chmod(path, 0o755)  # mkdtemp makes it 0700; "other" must be able to look in
            yield path
            shutil.rmtree(path, ignore_errors=True)
            return
    pytest.skip("no writable folder outside /tmp")


