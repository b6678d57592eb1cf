"""A fork server started early (``ForkServerClient.start_early``) is waited for on first use, and one that
never says hello is the same failure as a server that does not start: a ``SandboxError`` from ``shared()``,
which ``ppo-course grade`` reports as a grader fault (exit 3, no score written; CONTRACT.md's exit codes).
"""

from __future__ import annotations

import json

import pytest
import torch

from grader.sandbox import ForkServerClient, Sandbox, SandboxError
from grader.sandbox import forkserver_client
from sandbox_helpers import write_submission

#: A stage-1 launcher that exits at once: the server process dies before its first use.
DEAD_LAUNCH = "import sys\nsys.exit(1)\n"


@pytest.fixture
def no_shared_server(monkeypatch):
    """This test's process-wide server starts from nothing (the session's server is put back afterwards)."""
    monkeypatch.delenv(forkserver_client.SHARE_ENV, raising=False)
    monkeypatch.setattr(ForkServerClient, "_shared", None)


def test_an_early_server_is_the_shared_one_once_it_said_hello(no_shared_server, tmp_path):
    ForkServerClient.start_early(warm_up=False)
    early = ForkServerClient._shared
    try:
        assert early is not None and early.pending  # started, its hello not read yet
        assert ForkServerClient.shared() is early and not early.pending
        sub = write_submission(tmp_path / "sub", {"ex1_ratio.py": "def add(a, b):\n    return a + b\n"})
        with Sandbox(sub, server=early) as sb:
            assert torch.equal(sb.load("ex1_ratio").add(torch.ones(1), torch.ones(1)), torch.full((1,), 2.0))
        ForkServerClient.start_early()  # a live server is kept: nothing new is started
        assert ForkServerClient._shared is early
    finally:
        early.close()


def test_an_early_server_that_died_before_its_first_use_is_a_sandbox_error(no_shared_server, monkeypatch):
    monkeypatch.setattr(forkserver_client, "_LAUNCH", DEAD_LAUNCH)
    ForkServerClient.start_early(warm_up=False)
    early = ForkServerClient._shared
    early.proc.wait(timeout=30)
    with pytest.raises(SandboxError, match="did not start"):
        ForkServerClient.shared()
    assert ForkServerClient._shared is None  # the next use starts a new one (and reports its own failure)


def test_a_batch_worker_does_not_start_its_own_early(no_shared_server, monkeypatch):
    monkeypatch.setenv(forkserver_client.SHARE_ENV, "/nonexistent/control.sock")
    ForkServerClient.start_early()
    assert ForkServerClient._shared is None  # shared() connects to the batch's server instead


def test_grade_reports_an_early_server_that_never_started_as_a_grader_fault(no_shared_server, monkeypatch,
                                                                            tmp_path, capsys):
    from ppo_course.cli import main

    monkeypatch.setattr(forkserver_client, "_LAUNCH", DEAD_LAUNCH)  # every start fails, the early one too
    sub = write_submission(tmp_path / "sub", {"ex1_ratio.py": "def add(a, b):\n    return a + b\n"})
    out, feedback = tmp_path / "results.json", tmp_path / "feedback.md"
    out.write_text(json.dumps({"score": 10}))  # an earlier run's score must not stand for this grading
    assert main(["grade", str(sub), "--out", str(out), "--feedback", str(feedback),
                 "--exercises", "ex1_ratio", "--quiet"]) == 3
    assert not out.exists() and not feedback.exists()
    err = capsys.readouterr().err
    assert "grader fault" in err and "did not start" in err
