"""The worker processes of a batch, parent side: how a worker is started, and the fresh-worker runner.

TA side, trusted. A worker is ``python -I`` in its own session and an empty
working folder with an allow-listed environment (:func:`worker_environment`,
:func:`worker_command`); its side of the boundary is ``grader.runners.worker_process``,
which runs ``grader.grade.grade_submission``, whose sandbox forks the student's
children (the student's code never runs in a worker). :func:`run_worker` is the
fresh-worker ``grader.runners.runner.Runner``: one process per student (the Gradescope
runner's, and a batch's with ``PPO_COURSE_WARM_WORKERS=0``).
"""

from __future__ import annotations

import errno
import os
import subprocess
import tempfile
import sys
import threading
import time
from pathlib import Path

from grader.intake.request import GradeRequest
from grader.runners.runner import RESULT_FILE, WorkerOutcome, Workers, died_message, kill_group, read_result, time_out_message

def default_jobs() -> int:
    """The default worker count: the CPU cores this process may use (at least 1)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


def disk_full(exc: BaseException) -> bool:
    """True for "no space left" / "quota exceeded": the batch must stop, not mark students crashed."""
    return isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)


_BATCH_FORKSERVER = None
_BATCH_FORKSERVER_LOCK = threading.Lock()

#: Set to 1 to give every worker a fork server of its own (slower; for debugging).
OWN_FORKSERVER_ENV = "PPO_COURSE_BATCH_OWN_FORKSERVER"


def shared_forkserver_env() -> dict[str, str]:
    """The variables that make workers fork students' children from one server of this batch.

    Starting a fork server costs about 4 s of CPU (``import torch`` and a warm-up
    step of the toy model); one per batch instead of one per student saves that
    on every submission. The server never runs student code itself; each worker's
    connection owns its children, which die with that connection, and the server
    dies with this process. Started lazily (a resumed batch with nothing to grade
    never pays for it); on any failure the workers start their own, as before.
    """
    global _BATCH_FORKSERVER
    if os.environ.get(OWN_FORKSERVER_ENV) == "1":
        return {}
    with _BATCH_FORKSERVER_LOCK:
        try:
            from grader.sandbox.forkserver_client import ForkServerClient

            if _BATCH_FORKSERVER is None or not _BATCH_FORKSERVER.alive():
                _BATCH_FORKSERVER = ForkServerClient(share=True)
            return _BATCH_FORKSERVER.share_env()
        except Exception as exc:  # the workers fall back to a server of their own
            print(f"ppo-course grade-batch: no shared fork server ({exc}); each worker starts its own",
                  file=sys.stderr)
            _BATCH_FORKSERVER = None
            return {}


#: The operator's variables a worker keeps (everything else, PYTHONPATH and tokens included, is dropped).
_WORKER_ENV_KEEP = ("PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "LC_CTYPE", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                     "OPENBLAS_NUM_THREADS", OWN_FORKSERVER_ENV)


def worker_environment(shared_server: bool = True) -> dict[str, str]:
    """A worker's whole environment: a short allow-list of the operator's, never PYTHON* or tokens, the
    path of the course's secret file as this process resolved it (``grader.course_secret.worker_env``; the
    worker reads the file, never makes one; its sandboxed children get neither) and the root of the grader's
    store on disk (``grader.hidden.disk_cache.worker_env``)."""
    from grader.course_secret import worker_env
    from grader.hidden import disk_cache

    env = {k: os.environ[k] for k in _WORKER_ENV_KEEP if k in os.environ}
    env.update(worker_env())
    env.update(disk_cache.worker_env())  # the grader's store on disk, as this process resolved it
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    # N workers on N cores: intra-op threads would only oversubscribe.
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env.setdefault(var, "1")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if shared_server:
        env.update(shared_forkserver_env())
    return env


def run_worker(request: GradeRequest, scratch: Path, *, workers: Workers | None = None) -> WorkerOutcome:
    """Grade one staged submission in a fresh, isolated worker process (``python -I``, see ``_WORKER_BOOT``).

    The worker runs in a new session (its own process group) so that the
    time-out kills it and everything it started, in an empty working folder
    with an allow-listed environment (``_worker_env``). Its stdout/stderr go
    to ``scratch/worker.log``. The request travels as one ``--request JSON``
    argument, its clock started (:meth:`GradeRequest.started`): the worker's
    sandboxed calls stop at the same absolute deadline, less a margin to write
    results.

    Returns:
        a :class:`WorkerOutcome`; ``timed-out`` after ``request.timeout_s`` seconds of
        wall clock, ``crashed`` when the worker exits without results.
    """
    scratch.mkdir(parents=True, exist_ok=True)
    cwd = scratch / "cwd"  # an empty working folder: nothing of the operator's (or a submission's) is found there
    cwd.mkdir(exist_ok=True)
    timeout_s = request.timeout_s
    t0 = time.monotonic()
    # Absolute: the worker runs in its own empty folder.
    request = request.started(t0).model_copy(update={"submission": Path(request.submission).resolve()})
    # `python -I`: no cwd, PYTHONPATH or user site on sys.path, so a student folder named `grader/`
    # or `torch/` in the operator's working folder can never be imported by the worker.
    cmd = [*worker_command("worker"), "--request", request.model_dump_json(), "--out", str(scratch.resolve()),
           "--parent-pid", str(os.getpid())]
    log_path = scratch / "worker.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=worker_environment(),
            cwd=cwd,
            start_new_session=True,
        )
        if workers is not None:
            workers.add(proc)
        try:
            rc = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            proc.wait()
            return WorkerOutcome(status="timed-out", message=time_out_message(timeout_s), seconds=time.monotonic() - t0)
        finally:
            # Whatever happened, nothing the worker started may outlive it.
            kill_group(proc)
            if workers is not None:
                workers.discard(proc)
    seconds = time.monotonic() - t0
    if rc == 0 and (scratch / RESULT_FILE).is_file():
        return read_result(scratch, seconds)
    return WorkerOutcome(status="crashed", message=died_message(log_path, rc), seconds=seconds)


#: What ``python -I -c`` runs in a worker: the grader's own folders (argv before ``--``) are appended to
#: sys.path only when the grader is not installed, then ``main`` gets the arguments after ``--``.
_WORKER_BOOT = (
    "import sys, importlib.util\n"
    "i = sys.argv.index('--')\n"
    "for p in sys.argv[1:i]:\n"
    "    name, _, folder = p.partition('=')\n"
    "    if importlib.util.find_spec(name) is None: sys.path.append(folder)\n"
    "from grader.runners.worker_process import main\n"
    "sys.exit(main(sys.argv[i + 1:]))\n"
)


class GraderMismatch(RuntimeError):
    """The batch's process and its workers would import different graders: the batch does not start."""


def check_one_grader(timeout_s: float = 120.0) -> str:
    """The grader fingerprint of this process, once a worker (``python -I``, :func:`worker_command`) confirms it
    imports the same grader; the one check that a batch's records name the grader that graded them.

    Raises:
        GraderMismatch: the worker's fingerprint differs (a checkout on ``PYTHONPATH`` beside an installed
            grader), or the worker could not say (both named, with where each grader is).
    """
    from grader.fingerprint import grader_fingerprint, package_root

    mine = grader_fingerprint()
    try:
        proc = subprocess.run(worker_command("fingerprint"), capture_output=True, text=True, timeout=timeout_s,
                              env=worker_environment(shared_server=False), cwd=tempfile.gettempdir())
        theirs, _, where = proc.stdout.strip().partition(" ")
    except (OSError, subprocess.TimeoutExpired) as exc:
        proc, theirs, where = None, "", f"({exc})"
    if proc is None or proc.returncode != 0 or theirs != mine:
        why = (proc.stderr.strip().splitlines() or [""])[-1] if proc is not None and proc.returncode else ""
        raise GraderMismatch(
            f"this process imports the grader from {package_root('grader')} (fingerprint {mine}), but its workers "
            f"(python -I, as every grading runs) import {where or 'no grader'} (fingerprint {theirs or 'unknown'}"
            f"{'; ' + why if why else ''}): the batch would record one grader and grade with another. Install the "
            "grader you mean to grade with (pip install -e .) or remove the other from PYTHONPATH, then rerun.")
    return mine


def worker_command(mode: str) -> list[str]:
    """The command line that starts a worker process: ``python -I -c BOOT name=folder ... -- MODE``.

    ``mode`` is ``worker`` (grade one submission) or ``serve`` (a warm worker), both run by
    ``grader.runners.worker_process.main`` on the worker's side; the caller appends that mode's arguments. The one place a worker's
    interpreter and boot code are chosen (fresh, warm and cluster workers alike).
    """
    return [sys.executable, "-I", "-c", _WORKER_BOOT, *_boot_paths(), "--", mode]


def _boot_paths() -> list[str]:
    """``name=folder`` for the grader: where this process found it."""
    import importlib.util

    out = []
    for name in ["grader"]:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.origin:
            continue
        origin = Path(spec.origin).resolve()
        folder = origin.parent.parent if spec.submodule_search_locations else origin.parent
        out.append(f"{name}={folder}")
    return out
