"""Warm graders: one long-lived trusted worker per job slot, grading student after student.

TA side, trusted. A fresh worker per student pays for an interpreter, ``import
torch``, the optimiser machinery (the first ``torch.optim.Adam`` pulls in
dynamo and sympy) and an interpreter shutdown: about 3 CPU-seconds before the
first hidden test runs. A warm worker pays them once and then grades one
staged submission per request::

    pool = WarmPool(workers=registry)              # in the batch parent
    outcome = pool.run(request, scratch)           # the same call as grader.runners.workers.run_worker

What does not change for a student: the worker is still ``python -I`` in its
own session, an empty working folder and an allow-listed environment
(``grader.runners.workers.worker_environment``); the student's code still runs only in the
sandbox's children, forked per submission from the batch's fork server, never
in the worker; each request carries the student's own ``SubmissionLimits``, and
the clock starts when the request is sent to a worker that is ready (a worker's
start is never charged to a student). What a warm worker keeps from one
student to the next is trusted only (imports, the grader's caches); everything
seeded is seeded per test (``ppo_course.sandbox.seeding``), so a grade does not
depend on who was graded before (``tests/batch/test_warm_workers.py`` checks
byte-identical results against fresh workers).

A worker is recycled (killed with its process group, a new one started for the
next request) after a time-out, after it died or failed, when its resident
memory passes ``max_rss_mb``, and after ``max_students`` gradings.

Protocol (newline-delimited JSON on the worker's stdin/stdout; its own prints
and the grader's log go to stderr, a log file):

- worker → ``{"ready": pid}`` once imports and warm-up are done;
- parent → one ``grader.intake.request.WarmRequest`` (``model_dump_json``): the ``GradeRequest``, its clock
  started, the scratch folder, and ``env`` (where the batch's fork server listens,
  ``grader.runners.workers.shared_forkserver_env``);
- worker (``grader.runners.worker_process.serve_main``) → ``{"ok": true}`` once ``out/result.json`` (the typed ``GradeResult``) is written,
  or ``{"ok": false, "error": "..."}`` (then it exits: a grader fault, the student is ``crashed``).
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import threading
import time
from pathlib import Path

from grader.intake.request import GradeRequest, WarmRequest
from grader.runners.runner import WorkerOutcome, Workers, died_message, kill_group, read_result, time_out_message
from grader.runners import workers as fresh  # fresh.worker_command: the one command line of a worker

#: How long a worker may take to import torch and warm up before the pool gives up on it (seconds).
START_TIMEOUT_S = 180.0
#: Environment variable: set to 0 to grade every student in a fresh worker (the old way; for debugging).
WARM_ENV = "PPO_COURSE_WARM_WORKERS"


def warm_workers_enabled() -> bool:
    """True unless ``PPO_COURSE_WARM_WORKERS=0``."""
    return os.environ.get(WARM_ENV, "1") != "0"


class _WorkerGone(Exception):
    """The worker died or closed its pipe; ``str(exc)`` says how."""


def serve_command(optimiser: bool = True) -> list[str]:
    """The command line of one warm worker of this process: ``worker_process serve --parent-pid PID``, with
    ``--no-optimiser`` when its warm-up leaves out the optimiser step (``worker_process.warm_up``)."""
    return [*fresh.worker_command("serve"), "--parent-pid", str(os.getpid())] + ([] if optimiser else ["--no-optimiser"])


class _WarmWorker:
    """One live worker process and its pipes (used by one pool thread at a time)."""

    def __init__(self, log_path: Path, cwd: Path, workers: Workers | None, optimiser: bool = True) -> None:
        self.log_path, self.graded = log_path, 0
        cwd.mkdir(parents=True, exist_ok=True)
        cmd = serve_command(optimiser)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "ab") as log:
            # The batch's fork server is named per request (it may still be starting while this worker warms up).
            self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                         env=fresh.worker_environment(shared_server=False),
                                         cwd=cwd, start_new_session=True)
        self._workers = workers
        if workers is not None:
            workers.add(self.proc)
        self._buf = b""
        hello = self._read_line(time.monotonic() + START_TIMEOUT_S)
        if hello is None or "ready" not in hello:
            self.kill()
            raise _WorkerGone(f"the worker did not start: {self._why_gone()}")

    def _why_gone(self) -> str:
        """How the worker ended, worded as a fresh worker's death (``grader.runners.workers.run_worker``)."""
        return died_message(self.log_path, self.proc.poll())

    def _read_line(self, deadline: float) -> dict | None:
        """The next JSON line from the worker; None at ``deadline``. Raises _WorkerGone on EOF."""
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], min(left, 1.0))
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                self.proc.wait()
                raise _WorkerGone(self._why_gone())
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        try:
            return json.loads(line)
        except ValueError:
            return {"ok": False, "error": "the worker wrote an unreadable reply"}

    def request(self, line: WarmRequest, timeout_s: float) -> dict | None:
        """Send one grading request; the reply, or None when ``timeout_s`` passed first."""
        t_end = time.monotonic() + timeout_s
        try:
            self.proc.stdin.write((line.model_dump_json() + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            self.proc.wait()
            raise _WorkerGone(self._why_gone()) from None
        return self._read_line(t_end)

    def rss_mb(self) -> float:
        """Resident memory of the worker in MiB (0 when unknown)."""
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        except (OSError, ValueError, IndexError):
            pass
        return 0.0

    def kill(self) -> None:
        kill_group(self.proc)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL does not wait
            pass
        for pipe in (self.proc.stdin, self.proc.stdout):
            try:
                pipe.close()
            except OSError:
                pass
        if self._workers is not None:
            self._workers.discard(self.proc)


class WarmPool:
    """Warm workers for one batch: one per pool thread, started on first use, recycled when they fail.

    A ``grader.runners.runner.Runner`` (``run``, also its ``__call__``): the signature and meaning of
    :func:`grader.runners.workers.run_worker`, so the batch takes either.

    Args:
        scratch: folder for the workers' logs and empty working folders.
        workers: the batch's registry of live processes (Ctrl-C kills them all).
        max_students: gradings before a worker is replaced (bounds anything that grows that the RSS check does not
            see). 1024: a restart costs ~3 CPU-s (interpreter, torch, the optimiser machinery, warm-up); after every
            64 students it was ~5% of a student's grading, a share that made the cost per student of a class of
            1,000 differ from a class of 200 (``benchmarks/grading_bench/scaling.py``).
        max_rss_mb: resident memory (MiB) past which a worker is replaced after its current student.
        optimiser: whether a worker's warm-up takes an optimiser step (``worker_process.warm_up``): the full
            profile's training run needs it at the first student; a fast batch's workers never do.
    """

    def __init__(self, scratch: Path, *, workers: Workers | None = None,
                 max_students: int = 1024, max_rss_mb: float = 3072.0, optimiser: bool = True) -> None:
        self.scratch, self.workers, self.optimiser = Path(scratch), workers, optimiser
        self.max_students, self.max_rss_mb = max_students, max_rss_mb
        self._local = threading.local()
        self._all: set[_WarmWorker] = set()
        self._lock = threading.Lock()
        self._count = 0
        self.started = 0  # workers started (a figure for tests and the benchmark)
        # Start the batch's fork server now, while the first workers import and warm up.
        threading.Thread(target=fresh.shared_forkserver_env, daemon=True, name="start-forkserver").start()

    def _worker(self) -> _WarmWorker:
        worker = getattr(self._local, "worker", None)
        if worker is not None and worker.proc.poll() is None:
            return worker
        with self._lock:
            self._count += 1
            n = self._count
        worker = _WarmWorker(self.scratch / f"worker-{n}.log", self.scratch / f"cwd-{n}", self.workers,
                             self.optimiser)
        with self._lock:
            self._all.add(worker)
            self.started += 1
        self._local.worker = worker
        return worker

    def _retire(self, worker: _WarmWorker) -> None:
        worker.kill()
        with self._lock:
            self._all.discard(worker)
        if getattr(self._local, "worker", None) is worker:
            self._local.worker = None

    def run(self, request: GradeRequest, scratch: Path, *, workers: Workers | None = None) -> WorkerOutcome:
        """Grade one staged submission on this thread's warm worker (see :func:`grader.runners.workers.run_worker`).

        Returns:
            a :class:`WorkerOutcome`: ``graded`` with the worker's results, ``timed-out`` after
            ``request.timeout_s`` seconds from the request (the worker is then killed and replaced), or
            ``crashed`` when the worker died, failed, or wrote unreadable results.
        """
        scratch.mkdir(parents=True, exist_ok=True)
        timeout_s = request.timeout_s
        t_start = time.monotonic()
        try:
            worker = self._worker()
        except _WorkerGone as exc:
            return WorkerOutcome(status="crashed", message=str(exc), seconds=time.monotonic() - t_start)
        env = fresh.shared_forkserver_env()  # waits for the batch's fork server
        t0 = time.monotonic()  # the student's clock starts at a ready worker and fork server
        line = WarmRequest(request=request.started(t0).model_copy(
            update={"submission": Path(request.submission).resolve()}), out=scratch.resolve(), env=env)
        try:
            reply = worker.request(line, timeout_s)
        except _WorkerGone as exc:
            self._retire(worker)
            return WorkerOutcome(status="crashed", message=str(exc), seconds=time.monotonic() - t0)
        seconds = time.monotonic() - t0
        if reply is None:
            self._retire(worker)
            return WorkerOutcome(status="timed-out", message=time_out_message(timeout_s), seconds=seconds)
        worker.graded += 1
        if not reply.get("ok"):  # a grader fault: the worker logged it and exits with status 1
            try:
                worker.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
            message = worker._why_gone()
            self._retire(worker)
            return WorkerOutcome(status="crashed", message=message, seconds=seconds)
        if worker.graded >= self.max_students or worker.rss_mb() > self.max_rss_mb:
            self._retire(worker)
        return read_result(scratch, seconds)

    __call__ = run

    def close(self) -> None:
        """Stop every worker of the pool (their process groups are killed)."""
        with self._lock:
            live = list(self._all)
            self._all.clear()
        for worker in live:
            worker.kill()
