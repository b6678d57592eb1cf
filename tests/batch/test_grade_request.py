"""The one request model every runner carries (grader/intake/request.py, issue 22 item 2)."""

from __future__ import annotations

from pathlib import Path

import pydantic
import pytest

from ppo_course.submission_rules import SubmissionLimits
from grader.runners import worker_process, workers
from grader.runners.runner import read_result
from grader.intake.request import GradeRequest, WarmRequest


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
    monkeypatch.setattr(workers, "kill_group", lambda proc: None)
    monkeypatch.setattr(workers, "worker_environment", lambda shared_server=True: {})
    monkeypatch.setattr(workers.time, "monotonic", lambda: 500.0)
    outcome = workers.run_worker(_request(submission=Path("rel/ada")), tmp_path / "scratch")
    assert outcome.status == "crashed" and "exit status 3" in outcome.message
    cmd = seen["cmd"]
    sent = GradeRequest.model_validate_json(cmd[cmd.index("--request") + 1])
    assert sent == _request(submission=Path("rel/ada").resolve()).started(500.0)
    assert "--submission" not in cmd and "--limits" not in cmd and "--profile" not in cmd


def test_the_parent_stages_once_into_a_private_folder_and_the_worker_grades_that_copy(tmp_path, monkeypatch):
    """grade_entry stages into OUT/.batch/staging/<id>, made 0700 (staging/ too) just before dispatch; the request
    says ``staged`` and names that very folder; the worker hands it to the grader with ``staged=True`` (no copy)."""
    import os
    import stat

    from ppo_course.submission_rules import Entry
    from grader.student import grade_entry, zero_result

    src = tmp_path / "subs" / "ada"
    (src / "pkg").mkdir(parents=True)
    (src / "pkg" / "ex1_ratio.py").write_text("x = 1\n")
    (src / ".DS_Store").write_text("junk")
    staging = tmp_path / "out" / ".batch" / "staging" / "ada"
    (tmp_path / "out" / ".batch").mkdir(parents=True)
    seen: dict = {}

    def runner(request, scratch, *, workers=None):
        folder = Path(request.submission)
        seen["request"] = request
        seen["modes"] = [stat.S_IMODE(os.stat(p).st_mode) for p in (folder, folder.parent)]
        seen["files"] = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
        graded: dict = {}
        monkeypatch.setattr(worker_process, "grading_function",
                            lambda: lambda request: graded.update(path=Path(request.submission),
                                                                  staged=request.staged) or
                            zero_result("fast", ["ex1_ratio"], "stand-in"))
        worker_process.grade_request(request, scratch_dir)
        seen["graded"] = graded
        return read_result(scratch_dir, 0.1)

    workers_mod = workers
    scratch_dir = tmp_path / "scratch"
    scratch_dir.mkdir()
    limits = SubmissionLimits(timeout_s=60.0)
    outcome = grade_entry(Entry("ada", [src], "dir"), staging, tmp_path / "work" / "ada", limits=limits,
                          profile="fast", exercises=["ex1_ratio"], runner=runner)
    assert outcome.student_id == "ada" and outcome.notes == []
    request = seen["request"]
    assert request.staged is True and Path(request.submission) == staging
    assert seen["modes"] == [0o700, 0o700]
    assert seen["files"] == ["pkg/ex1_ratio.py"]  # the staged copy: junk left out, nothing else in it
    assert seen["graded"]["path"] == staging and seen["graded"]["staged"] is True
    assert not staging.exists()  # removed after the grading


def test_already_staged_gives_the_notes_restaging_would(tmp_path):
    """Grading the parent's copy where it is tells the student what restaging it told: the NUL-byte notes (and the
    count of .py files), the same strings, and nothing of the original's skipped files (the parent told those)."""
    from ppo_course.submission_layout import entry_for
    from ppo_course.submission_rules import already_staged, stage_submission

    src = tmp_path / "src"
    (src / ".venv").mkdir(parents=True)
    (src / ".venv" / "pyvenv.cfg").write_text("home = /usr\n")
    (src / "ex1_ratio.py").write_bytes(b"x = 1\x00\n")
    (src / "ex2_clipped_loss.py").write_text("y = 2\n")
    first = stage_submission(entry_for(src), tmp_path / "once", SubmissionLimits())
    assert any(".venv" in n for n in first.notes)  # the parent's note on the skipped tool folder
    again = stage_submission(entry_for(tmp_path / "once"), tmp_path / "twice", SubmissionLimits())
    here = already_staged(tmp_path / "once")
    assert here.notes == again.notes == [n for n in first.notes if "NUL byte" in n]
    assert len(here.notes) == 1 and here.notes[0].startswith("ex1_ratio.py contains a NUL byte")
    assert here.n_python_files == again.n_python_files == 2 and here.root == tmp_path / "once"
