"""``grade-batch ... --cluster ADDRESS``: each staged submission graded as a task on a Dask scheduler.

The batch stays the local one (``grader.batch.run_batch``: discover, stage,
records, atomic writes, gradebook, resume, progress bar); only its step
"grade one staged submission in a fresh worker process" (``run_worker``) is
swapped for :class:`ClusterRunner`, which has the same signature and returns
the same ``WorkerOutcome``::

    staged folder ──pack_submission──▶ bytes + grader fingerprint ──Client.submit──▶ Dask worker
        (grader/runners/cluster_worker.py: check version and isolation, unpack, run_worker, GradeResult)
    WorkerOutcome JSON ◀── model_validate_json ◀── future.result()
        ──▶ the per-student step ──▶ results.json, feedback.md, batch.json (atomic, on the TA's disk)

Faults (docs/cluster.md):

- a worker that dies while grading: the scheduler runs the task elsewhere, up to
  its ``distributed.scheduler.allowed-failures`` (default 3) deaths; past that
  the student is recorded ``crashed`` with the reason (the batch's status
  vocabulary has no ``failed``). An exception inside a task (a node's full
  disk) is retried :data:`TASK_RETRIES` times. The client writes a student's
  files once, from the one result it receives, so a retried task never
  writes twice;
- the grader that grades is the workers', so the batch's fingerprint (the key
  of its records and of the regrade report) is the one the workers report
  (``ClusterRunner.fingerprint``), not that of the checkout the client
  imports; a client whose own grader differs is told so in one line;
- a worker without the client's grader secret (none, or another course's:
  compared by digest, ``grader.course_secret.secret_digest``; the secret is
  installed on each node by the TA and never sent over the network), with
  another grader fingerprint than the cluster's, or one that
  cannot isolate student code: refused at connection (``Client.run``) and
  again inside each task (a worker that joined later); its tasks go to the
  other workers, and when none is left the batch stops with
  :class:`ClusterUnavailable`;
- a worker that leaves (dies, is killed, or is stopped) while the batch runs:
  one warning line on the TA's terminal, naming it;
- the scheduler unreachable or gone: :class:`ClusterUnavailable` (a clear
  error, before Dask's own log lines, which are kept quiet); the batch
  connects before it creates anything in OUT_DIR, so a start without a
  scheduler leaves nothing behind, and a scheduler lost mid-batch leaves no
  empty student folder; whatever was written stays, and rerunning resumes, as
  after a client killed with SIGKILL (the batch's own records decide what is done).

Dask is pure Python and runs on Slurm/PBS (dask-jobqueue) and Kubernetes (the
Dask operator); this module schedules nothing itself.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from grader.intake.request import GradeRequest
from grader.runners.runner import BatchAborted, WorkerOutcome, Workers
from grader.runners.cluster_worker import (
    REQUIRED_ISOLATION,
    WorkerRefused,
    grade_task,
    pack_submission,
    worker_report,
)

#: Environment variable holding the scheduler's address when ``--cluster`` is not given.
CLUSTER_ENV = "PPO_COURSE_CLUSTER"
#: Times a task that raised (not a student's failure: a node's fault) is retried by Dask.
TASK_RETRIES = 2
#: Refusing workers met by one task before the batch stops (workers that joined with another version).
MAX_REFUSALS_PER_TASK = 20
#: Longest reason kept from a cluster fault in the gradebook's message column, characters.
MAX_REASON_CHARS = 300


class ClusterUnavailable(BatchAborted):
    """The Dask scheduler cannot be reached or is gone, or no worker may grade: the batch stops.

    Whatever was written before stays (atomic writes); rerunning resumes.
    """


def _short(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= MAX_REASON_CHARS else text[: MAX_REASON_CHARS - 1] + "…"


class ClusterRunner:
    """The ``grader.runners.runner.Runner`` that grades on a Dask distributed cluster.

    Args:
        address: the scheduler, ``tcp://host:8786`` (anything ``distributed.Client`` accepts).
        fingerprint: the grader fingerprint workers must have; default None: the workers' own
            (the most common among those that may grade), which then is :attr:`fingerprint`.
        log: where warnings go (a refused worker, one line each).
        retries: Dask retries of a task that raised (default :data:`TASK_RETRIES`).
        wait_for_workers_s: how long to wait for a first worker to join, seconds.

    Raises:
        ImportError: if ``distributed`` is not installed (``pip install 'ppo-course[cluster]'``).
        ClusterUnavailable: if the scheduler cannot be reached, no worker joins in time, or every
            worker is refused (another grader fingerprint, no isolation).
    """

    def __init__(self, address: str, *, fingerprint: str | None = None, log: Callable[[str], None],
                 retries: int = TASK_RETRIES, wait_for_workers_s: float = 120.0) -> None:
        try:
            from distributed import Client
        except ImportError as exc:
            raise ImportError("grade-batch --cluster needs Dask's `distributed` package: "
                              "pip install 'ppo-course[cluster]'") from exc
        from grader.course_secret import secret_digest

        self.address, self.fingerprint, self.log, self.retries = address, fingerprint, log, retries
        self.secret_digest = secret_digest()  # the course's secret, which every node must hold
        self.refused: dict[str, str] = {}  # worker address -> reason
        self._seen: set[str] = set()  # workers met so far (a worker that leaves is said once)
        self._watch_lock = threading.Lock()
        self._last_watch = 0.0
        self._said_reconnecting = False
        _quiet_dask_client()
        try:
            # How long to keep trying: Dask's own `distributed.comm.timeouts.connect` (30 s by default;
            # DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT=5s to shorten it).
            self.client = Client(address, set_as_default=False)
        except Exception as exc:  # OSError, TimeoutError, ValueError (a bad address): all say the same
            raise ClusterUnavailable(f"cannot reach the Dask scheduler at {address!r} ({type(exc).__name__}: "
                                     f"{_short(exc)}); start it (docs/cluster.md) or check --cluster / "
                                     f"${CLUSTER_ENV}") from None
        try:
            self.client.wait_for_workers(1, timeout=wait_for_workers_s)
        except Exception:
            self.close()
            raise ClusterUnavailable(f"no worker joined the Dask scheduler at {address} within "
                                     f"{wait_for_workers_s:g} s; start `dask worker {address}` "
                                     "(docs/cluster.md)") from None
        self._check_workers()

    # -- which workers may grade ------------------------------------------------
    def _check_workers(self) -> None:
        """Ask every worker for its fingerprint and isolation (``Client.run``); refuse the unfit ones."""
        try:
            reports = self.client.run(worker_report, on_error="return")
        except Exception as exc:
            raise ClusterUnavailable(f"the Dask scheduler at {self.address} stopped answering "
                                     f"({type(exc).__name__}: {_short(exc)})") from None
        self._seen |= set(reports)
        if self.fingerprint is None:
            self.fingerprint = self._adopt_fingerprint(reports)
        for address, report in sorted(reports.items()):
            if isinstance(report, BaseException):
                self._refuse(address, f"it cannot run the grader ({type(report).__name__}: {_short(report)}); "
                                      "install this version of ppo-course on the node")
                continue
            if report.get("secret") != self.secret_digest:
                self._refuse(address, _secret_reason(report, self.secret_digest))
                continue
            if report["fingerprint"] != self.fingerprint:
                self._refuse(address, f"its grader fingerprint is {report['fingerprint']}, the client's is "
                                      f"{self.fingerprint}: install the client's exact version of ppo-course there")
                continue
            missing = [f.replace("_", " ") for f in REQUIRED_ISOLATION if not report["isolation"].get(f)]
            if missing:  # checked in each task too (cluster_worker.refusal)
                self._refuse(address, f"this node cannot isolate student code (the kernel refuses a "
                                      f"{' and a '.join(missing)}), so it would run it unconfined; run the worker "
                                      "as root or on a kernel with unprivileged user namespaces (docs/cluster.md)")
        self._raise_if_none_left()

    def _adopt_fingerprint(self, reports: dict) -> str:
        """The workers' grader fingerprint (most common among the fit ones; a tie: this checkout's if it is one
        of them, else the smallest), said in one line when it is not this checkout's."""
        from grader.fingerprint import grader_fingerprint

        fit = [r["fingerprint"] for r in reports.values() if not isinstance(r, BaseException)
               and r.get("secret") == self.secret_digest and all(r["isolation"].get(f) for f in REQUIRED_ISOLATION)]
        if not fit:
            return grader_fingerprint()  # nobody may grade: _raise_if_none_left says why
        counts, local = Counter(fit), grader_fingerprint()
        chosen = min(counts, key=lambda f: (-counts[f], f != local, f))  # a tie: this checkout's, if it is one
        if chosen != local:
            self.log(f"note: the Dask workers grade with grader {chosen}, this checkout is {local}; the workers' "
                     "grader is what grades, so the records and the regrade report use theirs")
        return chosen

    def watch_workers(self) -> None:
        """Say once, on the TA's terminal, each worker that left the cluster since the last look (at most 1/s)."""
        now = time.monotonic()
        with self._watch_lock:
            if now - self._last_watch < 1.0:
                return
            self._last_watch = now
            try:
                live = set(self._live_workers())
            except Exception:  # the scheduler is gone: _result says so
                return
            for gone in sorted(self._seen - live):
                self.log(f"warning: Dask worker {gone} left the cluster (it died or was stopped); the scheduler "
                         "reruns its tasks on the other workers")
            self._seen = live

    def _refuse(self, address: str, reason: str) -> None:
        if address not in self.refused:
            self.refused[address] = reason
            self.log(f"warning: Dask worker {address} refused: {reason}")

    def _live_workers(self) -> list[str]:
        try:
            return sorted(self.client.scheduler_info(n_workers=-1)["workers"])
        except TypeError:  # older distributed: no n_workers argument
            return sorted(self.client.scheduler_info()["workers"])

    def _raise_if_none_left(self) -> list[str]:
        live = self._live_workers()
        good = [w for w in live if w not in self.refused]
        if not good:
            reasons = "; ".join(f"{w}: {r}" for w, r in sorted(self.refused.items()) if w in live) or "none joined"
            raise ClusterUnavailable(f"no worker of the Dask cluster at {self.address} may grade ({reasons})")
        return good

    def default_jobs(self) -> int:
        """Tasks kept in flight: twice the threads of the accepted workers (so no slot waits on the client)."""
        threads = self.client.nthreads()
        return max(2, 2 * sum(n for w, n in threads.items() if w not in self.refused))

    # -- one submission ---------------------------------------------------------
    def __call__(self, request: GradeRequest, scratch: Path, *, workers: Workers | None = None) -> WorkerOutcome:
        """Grade the staged folder ``request.submission`` on the cluster; the local ``run_worker``'s contract.

        ``scratch`` is unused (nothing of the grading touches the TA's disk); ``workers`` is the
        batch's ``Workers``, whose ``stopping`` (Ctrl-C) cancels the task. The task carries the
        submission's bytes and the request as JSON (``GradeRequest.model_dump_json``; its fingerprint
        this client's, its clock started on the node), the same limits as a local worker's.

        Returns:
            ``WorkerOutcome``: graded (results and feedback from the typed ``GradeResult``),
            timed-out, or crashed with the reason (including a task lost with too many workers).

        Raises:
            ClusterUnavailable: the scheduler is gone, or no worker may grade any more.
            KeyboardInterrupt: when the batch is stopping.
        """
        from distributed import KilledWorker

        archive = pack_submission(request.submission)
        request_json = request.model_copy(update={"fingerprint": self.fingerprint,
                                                  "secret_digest": self.secret_digest}).model_dump_json()
        t0 = time.monotonic()
        for _ in range(MAX_REFUSALS_PER_TASK):
            refused = bool(self.refused)
            allowed = self._raise_if_none_left() if refused else None
            future = self.client.submit(
                grade_task, archive, request_json,
                key=f"ppo-course-grade-{uuid.uuid4().hex}", pure=False, retries=self.retries,
                workers=allowed, allow_other_workers=refused,
            )
            try:
                text = self._result(future, workers)
            except WorkerRefused as exc:
                self._refuse(exc.address, exc.reason)
                continue  # to the workers not refused yet
            except KilledWorker as exc:
                return WorkerOutcome(status="crashed", message=_short(
                    f"the cluster lost every worker that tried to grade this submission (Dask KilledWorker: "
                    f"{exc}); a node may be short of memory"), seconds=time.monotonic() - t0)
            except (ClusterUnavailable, KeyboardInterrupt):
                raise
            except Exception as exc:
                return WorkerOutcome(status="crashed", message=_short(
                    f"grading failed on the cluster in {self.retries + 1} attempts "
                    f"({type(exc).__name__}: {exc})"), seconds=time.monotonic() - t0)
            break
        else:
            raise ClusterUnavailable(f"{MAX_REFUSALS_PER_TASK} workers of the Dask cluster at {self.address} in a row "
                                     "refused to grade: " + "; ".join(f"{w}: {r}" for w, r in self.refused.items()))
        # The node's WorkerOutcome, the typed GradeResult in it as its worker wrote it, validated here.
        return WorkerOutcome.model_validate_json(text)

    def _result(self, future, workers) -> str:
        """The task's result, polling so that Ctrl-C and a lost scheduler are noticed within a second."""
        while not future.done():
            if workers is not None and getattr(workers, "stopping", False):
                try:
                    future.cancel()
                except Exception:  # the client is closing too: the scheduler drops the task with it
                    pass
                raise KeyboardInterrupt
            if self.client.status in ("closing", "closed"):
                break
            if self.client.status == "connecting" and not self._said_reconnecting:
                self._said_reconnecting = True
                self.log(f"warning: lost contact with the Dask scheduler at {self.address}; waiting for it to "
                         "come back (Dask's distributed.comm.timeouts.connect, 30 s by default)")
            self.watch_workers()
            time.sleep(0.1)
        if future.status in ("cancelled", "lost") or self.client.status in ("closing", "closed"):
            raise ClusterUnavailable(f"lost the Dask scheduler at {self.address} while grading "
                                     f"(client {self.client.status}, task {future.status}); the students "
                                     "written so far are kept: rerun the same command to resume")
        return future.result()

    def close(self) -> None:
        """Disconnect from the scheduler (tasks still queued for this client are released)."""
        try:
            self.client.close(timeout=10)
        except Exception:  # already gone: nothing to release
            pass


def _secret_reason(report: dict, wanted: str) -> str:
    """Why a node's reported grader secret (``worker_report``'s ``secret``) cannot grade for this client."""
    if report.get("secret") is None:
        return (f"it has no grader secret it may use ({_short(report.get('secret_problem', ''))}); install the "
                "course's there: `ppo-course secret show --value | ssh NODE ppo-course secret init --from -` "
                "(docs/cluster.md)")
    return (f"its grader secret (digest {report['secret']}) is not this course's (digest {wanted}); install the "
            "course's there with `ppo-course secret init --from` (docs/cluster.md)")


def _quiet_dask_client() -> None:
    """Keep Dask's client-side log lines (a raw ``ERROR ... after 30.00 seconds``) off the TA's terminal:
    :class:`ClusterUnavailable` says what happened, and what to do."""
    for name in ("distributed.client", "distributed.core", "distributed.comm", "distributed.batched"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def resolve_address(cli_value: str | None) -> str | None:
    """The scheduler address: ``--cluster`` if given, else ``$PPO_COURSE_CLUSTER``, else None (local pool)."""
    value = cli_value if cli_value is not None else os.environ.get(CLUSTER_ENV)
    value = (value or "").strip()
    return value or None
