"""Warm graders (grader/runners/warm.py): one long-lived trusted worker per job slot, recycled when it must be.

The recycling tests use the stand-in grader (stand_in_grader.py: ``STANDIN_HANG``
sleeps, ``STANDIN_CRASH`` exits with status 3); the determinism test uses the
real hidden graders on the demo cohort: the same submission must get
byte-identical results and feedback whoever was graded before it in the same
worker, and the same as in a fresh worker.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
from pathlib import Path

import pytest
from conftest import STAND_IN, write_student

from grader.batch import run_batch
from ppo_course.submission_rules import SubmissionLimits
from grader.intake.request import GradeRequest
from grader.runners.warm import WarmPool
from grader.runners.runner import Workers

COHORT = Path(__file__).resolve().parents[2] / "examples" / "cohort" / "submissions"


def _pool_run(pool: WarmPool, submission: Path, scratch: Path, timeout_s: float = 60.0):
    return pool.run(GradeRequest(submission=submission, student_id=submission.name, timeout_s=timeout_s), scratch)


def _alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie waiting to be reaped counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z"


def test_one_worker_grades_student_after_student(stand_in, tmp_path):
    for sid in ("a", "b", "c"):
        write_student(tmp_path / "subs", sid, {"ex1_ratio.py": "x = 1\n"})
    pool = WarmPool(tmp_path / "warm")
    try:
        outcomes = [_pool_run(pool, tmp_path / "subs" / sid, tmp_path / "out" / sid) for sid in ("a", "b", "c")]
    finally:
        pool.close()
    assert [o.status for o in outcomes] == ["graded"] * 3
    assert all(o.result.exercises["ex1_ratio"].score == 2.0 for o in outcomes)
    assert pool.started == 1  # one worker, three students


def test_a_hang_is_timed_out_and_the_next_student_gets_a_new_worker(stand_in, tmp_path):
    write_student(tmp_path / "subs", "hanger", {"ex1_ratio.py": "STANDIN_HANG\n"})
    write_student(tmp_path / "subs", "after", {"ex1_ratio.py": "x = 1\n"})
    pool = WarmPool(tmp_path / "warm")
    try:
        first = _pool_run(pool, tmp_path / "subs" / "hanger", tmp_path / "out" / "hanger", timeout_s=3)
        hung_pid = next(iter(pool._all)).proc.pid if pool._all else None
        second = _pool_run(pool, tmp_path / "subs" / "after", tmp_path / "out" / "after")
    finally:
        pool.close()
    assert first.status == "timed-out" and "longer than the limit of 3 s" in first.message
    assert second.status == "graded" and pool.started == 2
    assert hung_pid is None or not _alive(hung_pid)  # the hung worker was killed, not left behind


def test_a_crashed_worker_is_replaced_and_says_how_it_died(stand_in, tmp_path):
    write_student(tmp_path / "subs", "crasher", {"ex1_ratio.py": "STANDIN_CRASH\n"})
    write_student(tmp_path / "subs", "after", {"ex1_ratio.py": "BUG_VALUE\n"})
    pool = WarmPool(tmp_path / "warm")
    try:
        first = _pool_run(pool, tmp_path / "subs" / "crasher", tmp_path / "out" / "crasher")
        second = _pool_run(pool, tmp_path / "subs" / "after", tmp_path / "out" / "after")
    finally:
        pool.close()
    assert first.status == "crashed" and "exit status 3" in first.message
    assert second.status == "graded" and second.result.exercises["ex1_ratio"].score == 1.0
    assert pool.started == 2


def test_workers_are_recycled_after_max_students(stand_in, tmp_path):
    for sid in "abcde":
        write_student(tmp_path / "subs", sid, {"ex1_ratio.py": "x = 1\n"})
    pool = WarmPool(tmp_path / "warm", max_students=2)
    try:
        outcomes = [_pool_run(pool, tmp_path / "subs" / sid, tmp_path / "out" / sid) for sid in "abcde"]
    finally:
        pool.close()
    assert [o.status for o in outcomes] == ["graded"] * 5
    assert pool.started == 3  # 2 + 2 + 1


def test_close_and_ctrl_c_leave_no_worker_behind(stand_in, tmp_path):
    write_student(tmp_path / "subs", "a", {"ex1_ratio.py": "x = 1\n"})
    registry = Workers()
    pool = WarmPool(tmp_path / "warm", workers=registry)
    assert _pool_run(pool, tmp_path / "subs" / "a", tmp_path / "out" / "a").status == "graded"
    pid = next(iter(pool._all)).proc.pid
    registry.kill_all()  # what run_batch does on Ctrl-C
    pool.close()
    assert not _alive(pid)


def test_a_batch_of_stand_ins_uses_one_worker_per_job_slot(stand_in, tmp_path, monkeypatch):
    for sid in ("a", "b", "c", "d"):
        write_student(tmp_path / "subs", sid, {"ex1_ratio.py": "x = 1\n"})
    started = []
    real_init = WarmPool.__init__

    def spy(self, *a, **k):
        real_init(self, *a, **k)
        started.append(self)

    monkeypatch.setattr(WarmPool, "__init__", spy)
    summary = run_batch(tmp_path / "subs", tmp_path / "out", jobs=1, progress=False, report=False)
    assert [r.status for r in summary.records] == ["graded"] * 4
    assert len(started) == 1 and started[0].started == 1


def _grade_in_order(order: list[str], out: Path, subs: Path, warm: bool, monkeypatch) -> dict[str, tuple[str, str]]:
    monkeypatch.setenv("PPO_COURSE_WARM_WORKERS", "1" if warm else "0")
    for sid in order:  # the batch grades in id order: give each run its own ids in the wanted order
        shutil.copytree(COHORT / sid, subs / f"{order.index(sid)}-{sid}")
    run_batch(subs, out, jobs=1, profile="fast", exercises=["ex1_ratio", "ex2_clipped_loss", "ex4_gae"],
              limits=SubmissionLimits(timeout_s=300), progress=False, report=False)
    got = {}
    for sid in order:
        folder = out / f"{order.index(sid)}-{sid}"
        results = json.loads((folder / "results.json").read_text())
        results.get("extra_data", {}).pop("timing", None)
        got[sid] = (json.dumps(results, sort_keys=True), (folder / "feedback.md").read_text())
    return got


@pytest.mark.slow
def test_a_grade_does_not_depend_on_who_was_graded_before_in_the_same_worker(tmp_path, monkeypatch):
    """ada (all right), chen (wrong ex2), kai (wrong ex1): two orders in one warm worker, and fresh workers."""
    monkeypatch.delenv("PYTHONPATH", raising=False)
    students = ["chen", "kai", "ada"]
    forward = _grade_in_order(students, tmp_path / "o1", tmp_path / "s1", True, monkeypatch)
    backward = _grade_in_order(students[::-1], tmp_path / "o2", tmp_path / "s2", True, monkeypatch)
    fresh = _grade_in_order(students, tmp_path / "o3", tmp_path / "s3", False, monkeypatch)
    for sid in students:
        assert forward[sid] == backward[sid] == fresh[sid], sid
    assert forward["chen"] != forward["ada"]  # the comparison can fail: different students differ


def test_a_killed_batch_leaves_no_warm_worker(stand_in, tmp_path):
    """The warm worker watches the batch's pid: when the batch is gone, the worker kills its own group."""
    import subprocess
    import sys
    import time

    write_student(tmp_path / "subs", "a", {"ex1_ratio.py": "STANDIN_HANG\n"})
    code = (
        "import sys; from pathlib import Path; from grader.runners.warm import WarmPool\n"
        "from grader.intake.request import GradeRequest\n"
        f"import stand_in_grader; stand_in_grader.install({STAND_IN!r})\n"
        f"pool = WarmPool(Path({str(tmp_path / 'warm')!r}))\n"
        f"pool.run(GradeRequest(submission=Path({str(tmp_path / 'subs' / 'a')!r}), timeout_s=600),"
        f" Path({str(tmp_path / 'out')!r}))\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", code], env=os.environ.copy())
    worker_pid = None
    for _ in range(300):
        time.sleep(0.2)
        found = subprocess.run(["pgrep", "-f", "-P", str(parent.pid), "serve --parent-pid"],
                               capture_output=True, text=True).stdout.split()
        if found:
            worker_pid = int(found[0])
            break
    assert worker_pid is not None, "no warm worker started"
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    for _ in range(50):
        if not _alive(worker_pid):
            break
        time.sleep(0.2)
    assert not _alive(worker_pid)


def test_a_fast_batch_warms_its_workers_without_the_optimiser_machinery():
    """``warm_up(optimiser=False)`` imports the grader but not ``torch._dynamo`` (imported by an Adam step, about
    1.5 CPU-s); the pool asks its workers for that only in the full profile."""
    import subprocess
    import sys

    probe = ("import sys; from grader.runners.worker_process import warm_up; warm_up(optimiser={}); "
             "print('grader.grade' in sys.modules, 'torch._dynamo' in sys.modules)")
    lean = subprocess.run([sys.executable, "-c", probe.format(False)], capture_output=True, text=True, check=True)
    full = subprocess.run([sys.executable, "-c", probe.format(True)], capture_output=True, text=True, check=True)
    assert lean.stdout.split() == ["True", "False"]
    assert full.stdout.split() == ["True", "True"]

    from grader.runners.warm import serve_command

    assert serve_command(False)[-1] == "--no-optimiser" and "--no-optimiser" not in serve_command(True)
