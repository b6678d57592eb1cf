"""The pieces of grade-batch --cluster that need no long grading: bytes, refusals, a scheduler that is not there or goes away."""

from __future__ import annotations

import io
import os
import socket
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import pytest

distributed = pytest.importorskip("distributed")  # in the `test` extra: present wherever make test runs

from grader.runners import cluster_worker  # noqa: E402
from grader.batch import run_batch  # noqa: E402
from grader.fingerprint import grader_fingerprint  # noqa: E402
from grader.records.gradebook import RECORD  # noqa: E402
from grader.runners.cluster import CLUSTER_ENV, ClusterUnavailable, resolve_address  # noqa: E402
from grader.intake.request import GradeRequest  # noqa: E402
from grader.runners.cluster_worker import WorkerRefused, grade_task, pack_submission, unpack_submission  # noqa: E402

pytestmark = pytest.mark.xdist_group("cluster")

ROOT = Path(__file__).resolve().parents[2]
STAND_IN_DIR = ROOT / "tests" / "batch"  # stand_in_grader.py: a fast grade_submission with the real GradeResult
STAND_IN = "stand_in_grader:grade_submission"


def test_packed_submission_unpacks_to_the_same_files(tmp_path):
    src = tmp_path / "src"
    (src / "helpers").mkdir(parents=True)
    files = {"ex4_gae.py": b"def compute_gae():\n    pass\n", "helpers/util.py": b"X = 1\n", "notes.txt": "é\n".encode()}
    for name, data in files.items():
        (src / name).write_bytes(data)
    data = pack_submission(src)
    assert data == pack_submission(src)  # the bytes depend on the content only
    unpack_submission(data, tmp_path / "dest")
    got = {p.relative_to(tmp_path / "dest").as_posix(): p.read_bytes()
           for p in (tmp_path / "dest").rglob("*") if p.is_file()}
    assert got == files


@pytest.mark.parametrize("name", ["../escape.py", "/etc/evil.py", "a/../../b.py", "a\\..\\b.py"])
def test_unpack_refuses_paths_leaving_the_folder(tmp_path, name):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(name, "x = 1\n")
    with pytest.raises(ValueError, match="outside its folder"):
        unpack_submission(buf.getvalue(), tmp_path / "dest")
    assert not (tmp_path / "escape.py").exists()


def test_grading_root_is_private_and_refuses_a_folder_made_by_someone_else(tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    root = cluster_worker.grading_root()
    assert root.parent == tmp_path and (root.stat().st_mode & 0o777) == 0o700
    assert (root / "staging").is_dir() and (root / "work").is_dir()
    root.chmod(0o777)  # as if another user had made it first, open to all
    with pytest.raises(PermissionError, match="not a private folder"):
        cluster_worker.grading_root()


def test_task_with_another_fingerprint_is_refused_before_grading(tmp_path):
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "ex1_ratio.py").write_text("raise SystemExit('must not run')\n")
    with pytest.raises(WorkerRefused) as caught:
        request = GradeRequest(submission=tmp_path / "s", student_id="s", profile="fast", exercises=["ex1_ratio"],
                               timeout_s=60.0, fingerprint="0123456789abcdef")
        grade_task(pack_submission(tmp_path / "s"), request.model_dump_json())
    assert "0123456789abcdef" in str(caught.value) and grader_fingerprint() in str(caught.value)


def test_node_without_namespaces_refuses_to_grade(monkeypatch):
    monkeypatch.setattr(cluster_worker, "_ISOLATION", {"network_namespace": False, "mount_namespace": True})
    why = cluster_worker.refusal(grader_fingerprint())
    assert why is not None and "network namespace" in why and "unconfined" in why
    # No switch turns the check off (a stand-in grader in tests is graded on an isolating node too); the
    # other argument is the client's secret digest, compared when given (the fingerprint holds it too).
    import inspect

    assert list(inspect.signature(cluster_worker.refusal).parameters) == ["fingerprint", "secret_digest"]


def test_node_isolation_is_the_kernels_answer():
    """The worker's probe (a fresh Python process) says what the sandbox's own probe says here."""
    from sandbox_child.zygote import probe

    granted = cluster_worker.node_isolation()
    assert set(cluster_worker.REQUIRED_ISOLATION) <= set(granted)
    assert granted == probe()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_scheduler_is_a_clear_error(tmp_path, capsys, monkeypatch):
    import dask

    from ppo_course.cli import main

    (tmp_path / "subs" / "ada").mkdir(parents=True)
    dead = f"tcp://127.0.0.1:{_free_port()}"
    monkeypatch.setenv(CLUSTER_ENV, dead)  # no --cluster: the environment names the scheduler
    assert resolve_address(None) == dead and resolve_address("tcp://other:1") == "tcp://other:1"
    with dask.config.set({"distributed.comm.timeouts.connect": "2s"}):
        rc = main(["grade-batch", str(tmp_path / "subs"), "--out", str(tmp_path / "out"), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 1
    assert f"cannot reach the Dask scheduler at {dead!r}" in err and "docs/cluster.md" in err
    assert err.lstrip().startswith("error: cannot reach"), err  # no raw Dask log line first
    assert not (tmp_path / "out").exists()  # connected first: no out/.batch/lock left behind


def test_scheduler_gone_mid_batch_is_a_clear_error_and_keeps_what_was_written(tmp_path):
    subs = tmp_path / "subs"
    for i in range(6):
        (subs / f"s{i}").mkdir(parents=True)
        (subs / f"s{i}" / "ex1_ratio.py").write_text("STANDIN_SLOW\n")  # 0.4 s of stand-in grading each
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(STAND_IN_DIR), os.environ.get("PYTHONPATH")]))}
    dask_cli = [sys.executable, "-m", "distributed.cli.dask_spec"]  # noqa: F841 - documented alternative
    scheduler = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                                  "--port", str(port), "--no-dashboard"], env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    worker = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads", "1",
                               "--no-dashboard", "--host", "127.0.0.1", "--no-nanny",
                               "--preload", str(STAND_IN_DIR / "stand_in_preload.py")], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out = tmp_path / "out"

    def kill_scheduler_after_first_student() -> None:
        deadline = time.monotonic() + 120
        while not list(out.glob(f"*/{RECORD}")) and time.monotonic() < deadline:
            time.sleep(0.05)
        scheduler.kill()

    try:
        old = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = env["PYTHONPATH"]  # the worker's grading processes import the stand-in
        threading.Thread(target=kill_scheduler_after_first_student, daemon=True).start()
        with pytest.raises(ClusterUnavailable, match="lost the Dask scheduler .* rerun the same command to resume"):
            run_batch(subs, out, progress=False, report=False, log=lambda m: None,
                      cluster=address)
    finally:
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old
        scheduler.kill()
        worker.kill()
        scheduler.wait()
        worker.wait()
    written = sorted(p.parent.name for p in out.glob(f"*/{RECORD}"))
    assert 1 <= len(written) < 6
    folders = sorted(p.name for p in out.iterdir() if p.is_dir() and not p.name.startswith("."))
    assert folders == written  # no empty student folder left by the tasks the lost scheduler took with it
    gradebook = (out / "gradebook.csv").read_text(encoding="utf-8").splitlines()
    assert [line.split(",")[0] for line in gradebook[1:]] == written  # the gradebook of what was written
