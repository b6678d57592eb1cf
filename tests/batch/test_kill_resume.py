"""A batch killed (kill -9 or Ctrl-C) at any moment, then rerun, ends with the gradebook of an uninterrupted run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import STAND_IN, write_student
from grader import batch
from grader.batch import run_batch
from test_batch import _processes_mentioning

# The grader fingerprint is pinned on both sides: teammates edit the grader while tests run, and a
# changed fingerprint would (rightly) regrade everyone, hiding whether the resume skipped anyone.
SCRIPT = """
import signal
import sys
# Ctrl-C's own handler, whatever this process inherited: a test that ran earlier in the same pytest worker
# may have left SIGINT ignored, and an ignored SIGINT is inherited (the batch then finished with exit 0).
signal.signal(signal.SIGINT, signal.default_int_handler)
from grader import batch
from grader.batch import run_batch
import stand_in_grader
stand_in_grader.install(sys.argv[3])
batch.grader_fingerprint = lambda: "pinned"
run_batch(sys.argv[1], sys.argv[2], jobs=2, progress=False, log=lambda m: None)
"""


@pytest.fixture(scope="module")
def slow_cohort(tmp_path_factory) -> Path:
    """Eight students whose stand-in grading takes ~0.8 s each (two slow modules: a loaded machine must still
    find the batch half-way), with assorted scores and one empty (read-only)."""
    subs = tmp_path_factory.mktemp("cohort") / "subs"
    for i in range(7):
        modules = {"ex1_ratio.py": "STANDIN_SLOW", "ex2_clipped_loss.py": "BUG_VALUE" * (i % 2),
                   "ex3_full_loss.py": "STANDIN_SLOW"}
        if i % 3 == 0:
            modules["ex4_gae.py"] = "BUG_GRAD"
        write_student(subs, f"student{i}", modules)
    (subs / "student7").mkdir()
    return subs


@pytest.fixture(scope="module")
def uninterrupted(slow_cohort, tmp_path_factory, stand_in_module) -> str:
    """The gradebook of an uninterrupted run (fingerprint pinned, as in the killed runs)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(batch, "grader_fingerprint", lambda: "pinned")
        out = tmp_path_factory.mktemp("uninterrupted")
        run_batch(slow_cohort, out, jobs=2, progress=False, log=lambda m: None)
    return (out / "gradebook.csv").read_text()


def _wait_gone(text: str, seconds: float = 5.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while (left := _processes_mentioning(text)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


@pytest.mark.parametrize(("sig", "kill_after_rows"), [(signal.SIGKILL, 0), (signal.SIGKILL, 3), (signal.SIGINT, 2)],
                         ids=["kill-9-at-start", "kill-9-after-3", "ctrl-c-after-2"])
def test_killed_then_rerun_gives_the_uninterrupted_gradebook(stand_in, slow_cohort, uninterrupted, tmp_path, sig,
                                                             kill_after_rows, monkeypatch):
    monkeypatch.setattr(batch, "grader_fingerprint", lambda: "pinned")
    want = uninterrupted
    assert want.count("\n") == 9  # header + 8 students

    out = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT, str(slow_cohort), str(out), STAND_IN],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    # Kill once the gradebook holds `kill_after_rows` students (0: as soon as a worker runs).
    while time.monotonic() < deadline:
        # Students finished: their batch.json, the per-student commit marker (the gradebook itself is
        # rewritten at most once a second, too coarse to find a short batch half-way on a loaded machine).
        n_done = len(list(out.glob("*/batch.json")))
        # Only while students are left (8): a batch seen already whole is not killed mid-way.
        if (kill_after_rows == 0 and (out / ".batch" / "work").exists()) or (kill_after_rows <= n_done < 8 and kill_after_rows):
            break
        time.sleep(0.02)
    assert proc.poll() is None, "the batch finished before it could be killed: make the cohort slower"
    os.kill(proc.pid, sig)
    assert proc.wait(timeout=30) != 0
    # The workers notice their parent is gone and take their process groups with them.
    assert _wait_gone(str(out)) == []
    partial = (out / "gradebook.csv").read_text() if (out / "gradebook.csv").exists() else ""
    assert partial != want

    resumed = run_batch(slow_cohort, out, jobs=2, progress=False, log=lambda m: None)
    assert (out / "gradebook.csv").read_text() == want
    if kill_after_rows:
        assert len(resumed.skipped) >= kill_after_rows  # finished students were not regraded


def test_rerun_sweeps_temporaries_a_kill_left_mid_write(stand_in, tmp_path):
    """kill -9 between the atomic writer's mkstemp and os.replace leaves `.name.xxx.tmp`: the rerun removes it."""
    subs = tmp_path / "subs"
    write_student(subs, "alice", {"ex1_ratio.py": "ok"})
    out = tmp_path / "out"
    run_batch(subs, out, jobs=1, progress=False, log=lambda m: None, report=False)
    stale = [out / ".gradebook.csv.k1ll3d.tmp", out / "alice" / ".feedback.md.k1ll3d.tmp"]
    for path in stale:
        path.write_text("half a file")
    keep = out / "alice" / "notes.tmp"  # not the writer's shape: a TA's own file stays
    keep.write_text("mine")
    run_batch(subs, out, jobs=1, progress=False, log=lambda m: None, report=False)
    assert [p for p in stale if p.exists()] == []
    assert keep.read_text() == "mine"
