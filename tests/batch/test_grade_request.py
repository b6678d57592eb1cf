"""The one request model every runner carries (grader/runners/request.py, issue 22 item 2)."""

from __future__ import annotations

from pathlib import Path

import pydantic
import pytest

from grader.intake.submission import SubmissionLimits
from grader.runners import workers
from grader.runners.request import GradeRequest, WarmRequest


def _request(**kw) -> GradeRequest:
    base = dict(submission=Path("/staged/ada"), student_id="ada", profile="fast", exercises=["ex1_ratio"],
                timeout_s=60.0, limits=SubmissionLimits(timeout_s=60.0), fingerprint="0123456789abcdef")
    return GradeRequest(**(base | kw))


def test_a_request_round_trips_through_its_one_serialization():
    request = _request().started(1000.0)
    assert GradeRequest.model_validate_json(request.model_dump_json()) == request
    line = WarmRequest(request=request, out=Path("/scratch/ada"), env={"PPO_COURSE_FORKSERVER": "/run/fs"})
    assert WarmRequest.model_validate_json(line.model_dump_json()) == line


def test_started_leaves_the_worker_a_margin_to_write_its_results():
    # By hand: 60 s -> margin min(30, 6) = 6 s: the sandbox stops at t0 + 54, its limits say 54 s.
    started = _request().started(1000.0)
    assert started.deadline == pytest.approx(1054.0) and started.limits.timeout_s == pytest.approx(54.0)
    assert started.timeout_s == 60.0  # the runner still kills at the full limit
    # 600 s -> margin min(30, 60) = 30 s.
    long = _request(timeout_s=600.0).started(0.0)
    assert long.deadline == pytest.approx(570.0) and long.limits.timeout_s == pytest.approx(570.0)
    # No limits: nothing to start (the worker's defaults apply).
    assert _request(limits=None).started(5.0).deadline is None


def test_a_request_refuses_unknown_fields_and_bad_values():
    with pytest.raises(pydantic.ValidationError):
        GradeRequest.model_validate_json('{"submission": "/s", "timeout_s": 1, "limits_json": "{}"}')
    with pytest.raises(pydantic.ValidationError):
        _request(profile="slow")
    with pytest.raises(pydantic.ValidationError):
        _request(timeout_s=0)


def test_a_fresh_worker_gets_the_request_as_its_one_argument(monkeypatch, tmp_path):
    """run_worker passes the request, clock started and path absolute, as ``--request JSON``; nothing else of it."""
    seen = {}

    class FakeProc:
        pid = 0

        def __init__(self, cmd, **kw):
            seen["cmd"] = cmd

        def wait(self, timeout=None):
            return 3

    monkeypatch.setattr(workers.subprocess, "Popen", FakeProc)
    monkeypatch.setattr(workers, "_kill_group", lambda proc: None)
    monkeypatch.setattr(workers, "_worker_env", lambda shared_server=True: {})
    monkeypatch.setattr(workers.time, "monotonic", lambda: 500.0)
    outcome = workers.run_worker(_request(submission=Path("rel/ada")), tmp_path / "scratch")
    assert outcome.status == "crashed" and "exit status 3" in outcome.message
    cmd = seen["cmd"]
    sent = GradeRequest.model_validate_json(cmd[cmd.index("--request") + 1])
    assert sent == _request(submission=Path("rel/ada").resolve()).started(500.0)
    assert "--submission" not in cmd and "--limits" not in cmd and "--profile" not in cmd
