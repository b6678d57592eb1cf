"""grade-batch --cluster on a loopback Dask cluster: the local pool's gradebook, faults included.

One ``LocalCluster`` of two worker processes (one thread each, 127.0.0.1 only)
serves the whole module. The real-grader cohort is a subset of the demo
cohort graded on ``ex4_gae`` in the fast profile: a full solution (ada), a
syntax error (ivan), an empty folder (lea) and a zip under one top folder
(max). Expected values come from two independent places: the local pool's
own run (a different path: no Dask, no transfer) and
``examples/cohort/EXPECTED.md`` (ex4_gae column, measured and reasoned by
hand when the cohort was made).

The fault tests (a worker killed, the client killed, a refused worker) are
about the batch's mechanics, so, as in tests/batch, they grade with the
stand-in grader (tests/batch/stand_in_grader.py: the real ``GradeResult``,
~2-3 s a student with its ``STANDIN_SLOW`` markers) and compare with the local
pool grading the same cohort with the same stand-in.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

distributed = pytest.importorskip("distributed")  # in the `test` extra: present wherever make test runs

from grader.runners import cluster_worker  # noqa: E402
from grader.batch import run_batch  # noqa: E402
from grader.fingerprint import grader_fingerprint  # noqa: E402
from grader.records.gradebook import RECORD  # noqa: E402
from grader.runners.cluster import ClusterUnavailable  # noqa: E402
from ppo_course.submission_rules import SubmissionLimits  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("cluster")]

ROOT = Path(__file__).resolve().parents[2]
COHORT = ROOT / "examples" / "cohort" / "submissions"
STAND_IN_DIR = ROOT / "tests" / "batch"
STAND_IN = "stand_in_grader:grade_submission"
# Stand-in cohort: four modules sleep 0.4 s each (a task lasts ~2-3 s), with assorted scores.
SLOW_STUDENTS = {
    "s0": {},
    "s1": {"ex2_clipped_loss.py": "BUG_VALUE"},
    "s2": {"ex4_gae.py": "BUG_GRAD BUG_VALUE"},
    "s3": {"ex7_ppo_step.py": None},  # missing module
}
STAND_IN_OPTIONS = dict(progress=False, report=False)
PRELOAD = [str(STAND_IN_DIR / "stand_in_preload.py")]  # the Dask workers' grading processes use the stand-in
STUDENTS = ("ada", "ivan", "lea", "max.zip")
EXERCISES = ["ex4_gae"]
OPTIONS = dict(profile="fast", exercises=EXERCISES, progress=False, report=False)
# examples/cohort/EXPECTED.md, column ex4_gae, and the status column.
EXPECTED = {"ada": ("10", "graded"), "ivan": ("0", "graded"), "lea": ("0", "empty"), "max": ("10", "graded")}


@pytest.fixture(scope="module")
def cohort(tmp_path_factory) -> Path:
    """Four demo students (three folders, one zip), copied so that nothing writes into examples/."""
    subs = tmp_path_factory.mktemp("cluster-cohort") / "subs"
    subs.mkdir()
    for name in STUDENTS:
        src = COHORT / name
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, subs / name)
    return subs


@pytest.fixture(scope="module")
def local_batch(cohort, tmp_path_factory) -> Path:
    """The same batch graded by the local pool (two worker processes), the reference of every comparison."""
    out = tmp_path_factory.mktemp("local") / "out"
    run_batch(cohort, out, jobs=2, log=lambda m: None, **OPTIONS)
    return out


@pytest.fixture(scope="module")
def slow_cohort(tmp_path_factory) -> Path:
    """Four stand-in students (see SLOW_STUDENTS), the first four modules marked STANDIN_SLOW."""
    from grader.points import EXERCISES as STEMS

    subs = tmp_path_factory.mktemp("slow-cohort") / "subs"
    for sid, edits in SLOW_STUDENTS.items():
        (subs / sid).mkdir(parents=True)
        for stem in STEMS:
            extra = edits.get(f"{stem}.py", "")
            if extra is not None:
                slow = "STANDIN_SLOW" if stem in STEMS[:4] else ""  # 4 × 0.4 s: the task lasts ~2-3 s
                (subs / sid / f"{stem}.py").write_text(f"{slow} {extra}\n")
    return subs


@pytest.fixture(scope="module")
def stand_in_path():
    """Worker processes (local pool, Dask workers and their grading processes) can import the stand-in."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(STAND_IN_DIR), os.environ.get("PYTHONPATH")])))
        # Local workers run `python -I` (PYTHONPATH ignored): they find the stand-in where this process does.
        mp.syspath_prepend(str(STAND_IN_DIR))
        import stand_in_grader

        stand_in_grader.install(STAND_IN, mp)  # this process's (client's and local pool's) workers
        yield


@pytest.fixture(scope="module")
def local_slow(slow_cohort, stand_in_path, tmp_path_factory) -> Path:
    """The stand-in cohort graded by the local pool."""
    out = tmp_path_factory.mktemp("local-slow") / "out"
    run_batch(slow_cohort, out, jobs=2, log=lambda m: None, **STAND_IN_OPTIONS)
    return out


@pytest.fixture(scope="module")
def dask_cluster(stand_in_path):
    """A loopback LocalCluster: 2 worker processes (each under a nanny that restarts it), 1 thread each."""
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, host="127.0.0.1",
                                  dashboard_address=":0", preload=PRELOAD) as cluster, \
            distributed.Client(cluster, set_as_default=False) as client:
        yield cluster, client


def _rows(out: Path) -> dict[str, dict]:
    with open(out / "gradebook.csv", newline="", encoding="utf-8") as fh:
        return {r["student_id"]: r for r in csv.DictReader(fh)}


def _without_timing(results_path: Path) -> dict:
    results = json.loads(results_path.read_text(encoding="utf-8"))
    results["extra_data"].pop("timing", None)  # wall-clock seconds: the only part allowed to differ
    return results


def _assert_same_as_local(out: Path, local: Path, students=tuple(EXPECTED)) -> None:
    assert (out / "gradebook.csv").read_bytes() == (local / "gradebook.csv").read_bytes()
    for sid in students:
        assert (out / sid / "feedback.md").read_bytes() == (local / sid / "feedback.md").read_bytes(), sid
        assert _without_timing(out / sid / "results.json") == _without_timing(local / sid / "results.json"), sid
        record = json.loads((out / sid / RECORD).read_text(encoding="utf-8"))
        want = json.loads((local / sid / RECORD).read_text(encoding="utf-8"))
        record.pop("seconds"), want.pop("seconds")
        assert record == want, sid


def test_local_pool_matches_the_hand_made_table(local_batch):
    """The reference run itself agrees with EXPECTED.md (else every comparison below is moot)."""
    rows = _rows(local_batch)
    assert {sid: (r["ex4_gae"], r["status"]) for sid, r in rows.items()} == EXPECTED


@pytest.fixture(scope="module")
def local_batch_stand_in(cohort, stand_in_path, tmp_path_factory) -> Path:
    """The same cohort graded by the local pool with the stand-in grader the Dask workers preload."""
    out = tmp_path_factory.mktemp("local-stand-in") / "out"
    run_batch(cohort, out, jobs=2, log=lambda m: None, **OPTIONS)
    return out


def test_cluster_gradebook_is_byte_identical_to_the_local_pool(cohort, local_batch_stand_in, dask_cluster, tmp_path):
    granted = cluster_worker.node_isolation()
    if not all(granted.get(f) for f in cluster_worker.REQUIRED_ISOLATION):
        pytest.skip(f"this machine cannot isolate student code ({granted}): a worker here refuses to grade, "
                    "as test_workers_that_cannot_isolate_are_refused checks")
    cluster, _ = dask_cluster
    out = tmp_path / "out"
    summary = run_batch(cohort, out, cluster=cluster.scheduler_address, log=lambda m: None, **OPTIONS)
    assert sorted(summary.graded_now) == sorted(EXPECTED)
    _assert_same_as_local(out, local_batch_stand_in)  # the same grader on both sides (the workers' stand-in)
    # Resume works as locally: a rerun against the cluster grades nobody.
    again = run_batch(cohort, out, cluster=cluster.scheduler_address, log=lambda m: None, **OPTIONS)
    assert again.graded_now == [] and sorted(again.skipped) == sorted(EXPECTED)


def _executing(dask_worker) -> list[str]:
    """Runs on a worker (``Client.run``): the keys of the tasks it is executing now."""
    return [ts.key for ts in dask_worker.state.executing]


def test_worker_killed_mid_task_is_retried_elsewhere(slow_cohort, local_slow, dask_cluster, tmp_path):
    cluster, client = dask_cluster
    out = tmp_path / "out"
    killed: list[str] = []

    def kill_one_grading_worker() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not killed:
            running = client.run(_executing)
            busy = [w for w, keys in running.items() if any(k.startswith("ppo-course-grade-") for k in keys)]
            if busy:
                time.sleep(0.5)  # well inside the ~2-3 s task: its grading process is running
                pid = client.run(os.getpid, workers=busy[:1])[busy[0]]
                os.kill(pid, signal.SIGKILL)
                killed.append(busy[0])
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_one_grading_worker, daemon=True)
    killer.start()
    said: list[str] = []
    summary = run_batch(slow_cohort, out, cluster=cluster.scheduler_address, log=said.append,
                        **STAND_IN_OPTIONS)
    killer.join(timeout=5)
    assert killed, "no worker was seen grading, so none was killed"
    assert [m for m in said if killed[0] in m and "left the cluster" in m], said  # the TA sees the death
    assert sorted(summary.graded_now) == sorted(SLOW_STUDENTS)  # each student written once
    assert {r.status for r in summary.records} == {"graded"}  # the killed task was graded elsewhere
    _assert_same_as_local(out, local_slow, SLOW_STUDENTS)
    client.wait_for_workers(2, timeout=60)  # the nanny restarted it, for the next tests


# `ppo-course grade-batch` itself, with the stand-in grader slipped into run_batch (as tests/hostile does).
CLI_WITH_STAND_IN = (
    "import functools, sys\n"
    "from grader import batch\n"
    f"import stand_in_grader; stand_in_grader.install({STAND_IN!r})\n"
    "from ppo_course.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def test_client_killed_with_sigkill_then_resumed(slow_cohort, local_slow, dask_cluster, tmp_path):
    cluster, _ = dask_cluster
    out = tmp_path / "out"
    cmd = [sys.executable, "-c", CLI_WITH_STAND_IN, "grade-batch", str(slow_cohort), "--out", str(out),
           "--cluster", cluster.scheduler_address, "--no-progress"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 180
        while not list(out.glob(f"*/{RECORD}")) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    done_at_kill = sorted(p.parent.name for p in out.glob(f"*/{RECORD}"))
    assert 1 <= len(done_at_kill) < len(SLOW_STUDENTS), done_at_kill
    resumed = run_batch(slow_cohort, out, cluster=cluster.scheduler_address, log=lambda m: None,
                        **STAND_IN_OPTIONS)
    assert set(done_at_kill) <= set(resumed.skipped)
    assert sorted(resumed.graded_now + resumed.skipped) == sorted(SLOW_STUDENTS)
    _assert_same_as_local(out, local_slow, SLOW_STUDENTS)


def _pretend_other_version(fingerprint: str | None) -> None:
    """Runs on a worker: make it report the grader fingerprint ``fingerprint`` (None: its own again)."""
    real = cluster_worker.__dict__.setdefault("_real_worker_fingerprint", cluster_worker.worker_fingerprint)
    cluster_worker.worker_fingerprint = real if fingerprint is None else (lambda: fingerprint)


def test_the_workers_grader_is_the_fingerprint_not_the_clients_checkout(cohort, dask_cluster, tmp_path):
    """Issue 21 item 6: a TA whose client imports one copy of the code while every worker grades with another.
    The records (and so the regrade report) carry the workers' fingerprint, and the TA is told in one line."""
    cluster, client = dask_cluster
    other = "0123456789abcdef"
    client.run(_pretend_other_version, other)
    out = tmp_path / "out"
    said: list[str] = []
    try:
        summary = run_batch(cohort, out, cluster=cluster.scheduler_address, log=said.append, **OPTIONS)
    finally:
        client.run(_pretend_other_version, None)
    assert {json.loads((out / r.student_id / RECORD).read_text())["grader_fingerprint"] for r in summary.records} \
        == {other}
    assert [m for m in said if other in m and grader_fingerprint() in m and "the workers' grader" in m]


def _pretend_no_namespaces(granted: dict | None) -> None:
    """Runs on a worker: make its isolation probe's answer ``granted`` (None: probe again)."""
    cluster_worker._ISOLATION = granted


def test_workers_that_cannot_isolate_are_refused(cohort, dask_cluster, tmp_path):
    cluster, client = dask_cluster
    client.run(_pretend_no_namespaces, {"network_namespace": False, "mount_namespace": True})
    out = tmp_path / "out"
    try:
        with pytest.raises(ClusterUnavailable, match="cannot isolate student code .* network namespace"):
            run_batch(cohort, out, cluster=cluster.scheduler_address, log=lambda m: None, **OPTIONS)
    finally:
        client.run(_pretend_no_namespaces, None)
    assert not list(out.glob(f"*/{RECORD}"))


def test_one_refused_worker_leaves_the_batch_to_the_others(slow_cohort, local_slow, dask_cluster, tmp_path):
    cluster, client = dask_cluster
    bad = sorted(client.scheduler_info()["workers"])[0]
    client.run(_pretend_other_version, "fedcba9876543210", workers=[bad])
    warnings: list[str] = []
    try:
        summary = run_batch(slow_cohort, tmp_path / "out", cluster=cluster.scheduler_address,
                            log=warnings.append, **STAND_IN_OPTIONS)
    finally:
        client.run(_pretend_other_version, None, workers=[bad])
    assert [w for w in warnings if bad in w and "fedcba9876543210" in w]
    _assert_same_as_local(summary.out_dir, local_slow, SLOW_STUDENTS)


def test_task_lost_with_more_workers_than_allowed_is_recorded_crashed(stand_in_path, tmp_path):
    """Past the scheduler's allowed-failures (0 here: the first death), the student is `crashed`, with the reason."""
    import dask

    subs = tmp_path / "subs"
    (subs / "s0").mkdir(parents=True)
    (subs / "s0" / "ex1_ratio.py").write_text("STANDIN_SLOW\n")
    # The task runs until the killer kills its worker (a slow task could end first on a loaded machine, where the
    # killer's two round trips take longer than the task's sleeps); the submission's clock is the backstop.
    (subs / "s0" / "ex2_clipped_loss.py").write_text("STANDIN_HANG\n")
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}), \
            distributed.LocalCluster(n_workers=1, processes=True, threads_per_worker=1, host="127.0.0.1",
                                     dashboard_address=":0", preload=PRELOAD) as cluster, \
            distributed.Client(cluster, set_as_default=False) as client:
        killed: list[int] = []

        def kill_the_grading_worker() -> None:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                running = client.run(_executing)
                busy = [w for w, keys in running.items() if any(k.startswith("ppo-course-grade-") for k in keys)]
                if busy:
                    time.sleep(0.3)
                    pid = client.run(os.getpid, workers=busy[:1])[busy[0]]
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
                    return
                time.sleep(0.05)

        killer = threading.Thread(target=kill_the_grading_worker, daemon=True)
        killer.start()
        summary = run_batch(subs, tmp_path / "out", cluster=cluster.scheduler_address, log=lambda m: None,
                            limits=SubmissionLimits(timeout_s=300.0), **STAND_IN_OPTIONS)
        killer.join(timeout=5)
    assert killed
    (record,) = summary.records
    assert record.status == "grader_fault" and "KilledWorker" in record.message and len(record.message) <= 300
    assert summary.graded_now == ["s0"]


def test_workers_that_change_version_after_connection_are_refused_in_the_task(dask_cluster, stand_in_path, tmp_path):
    """The check inside each task: workers vetted at connection, then upgraded (or replaced) under the batch."""
    from grader.runners.cluster import ClusterRunner
    from grader.intake.request import GradeRequest

    cluster, client = dask_cluster
    client.wait_for_workers(2, timeout=60)
    warnings: list[str] = []
    runner = ClusterRunner(cluster.scheduler_address, fingerprint=grader_fingerprint(), log=warnings.append)
    staged = tmp_path / "s0"
    staged.mkdir()
    (staged / "ex1_ratio.py").write_text("x = 1\n")
    try:
        assert runner.refused == {}
        client.run(_pretend_other_version, "00000000deadbeef")
        with pytest.raises(ClusterUnavailable, match="no worker of the Dask cluster .* may grade"):
            runner(GradeRequest(submission=staged, student_id="s0", profile="fast", exercises=["ex1_ratio"],
                                timeout_s=60), tmp_path / "scratch")
    finally:
        client.run(_pretend_other_version, None)
        runner.close()
    assert sorted(runner.refused) == sorted(client.scheduler_info()["workers"])
    assert all("00000000deadbeef" in reason for reason in runner.refused.values())
    assert len(warnings) == 2
