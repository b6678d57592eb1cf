"""What runs on a Dask worker: one staged submission, graded exactly as the local pool grades it.

``grade-batch --cluster ADDRESS`` (``grader.runners.cluster``, the client side) sends
each staged submission as one task, :func:`grade_task`, to a Dask scheduler.
The task carries the submission's bytes (a zip made in memory by
:func:`pack_submission`, never a path on the TA's disk) and the client's grader
fingerprint. On the worker it

1. refuses (:class:`WorkerRefused`) when this node holds no grader secret or
   another course's (``grader.course_secret``: the node's own file, installed by
   the TA, compared by digest; the secret itself never crosses the network),
   when its grader fingerprint differs from the client's (another version of the
   grader would give other grades) or when this node cannot isolate student code
   (the kernel refuses the network or mount namespace of the sandbox,
   ``docs/threat_model.md``): it never grades unconfined;
2. unpacks the bytes into a fresh folder beside the other submissions graded
   on this node (:func:`grading_root`, :func:`unpack_submission`), as the
   local pool stages every student in one folder, which the sandbox hides;
3. grades them with ``grader.runners.workers.run_worker``, the local pool's own step:
   a fresh ``python -m grader.runners.worker_process worker`` process in its own process group,
   the same time-out, the same sandbox, sharing one warm fork server per Dask
   worker process (``import torch`` and the toy model's warm-up paid once per
   worker, not per task), so that a crash of student code never takes the
   Dask worker down and the limits are identical;
4. sends the outcome back typed: the runners' one ``grader.runners.runner.WorkerOutcome`` as JSON
   (``worker`` naming this Dask worker), holding the ``GradeResult`` itself. The client validates it with the
   model's own validator and writes the files, so the batch folder, the
   gradebook and resume are those of a local run.

This module runs on trusted grading nodes; student code only ever runs in the
sandbox's children, further down.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import zipfile
from pathlib import Path

from grader.intake.request import GradeRequest
from grader.runners.runner import Runner

#: Features of the sandbox a grading node must grant (``sandbox_child.zygote.probe``).
REQUIRED_ISOLATION: tuple[str, ...] = ("network_namespace", "mount_namespace")

# Per worker process: probed once, reused by every task (a test may pre-set it, see tests/cluster).
_ISOLATION: dict[str, bool] | None = None
_STATE_LOCK = threading.Lock()

_FIXED_ZIP_TIME = (1980, 1, 1, 0, 0, 0)


class WorkerRefused(RuntimeError):
    """This worker must not grade: another grader version, or no isolation for student code.

    Attributes:
        address: the worker's address (``tcp://host:port``), or ``""`` outside a Dask worker.
        reason: what a TA reads, with what to do about it.
    """

    def __init__(self, address: str, reason: str) -> None:
        super().__init__(address, reason)
        self.address, self.reason = address, reason

    def __str__(self) -> str:
        return f"worker {self.address or '(local)'} refused: {self.reason}"


# ------------------------------------------------------------------ the bytes


def pack_submission(root: Path) -> bytes:
    """The staged submission folder ``root`` as zip bytes, the same bytes for the same files.

    Entries are the regular files under ``root`` (relative POSIX paths,
    sorted), deflated, with a fixed timestamp and mode 0644, so that the
    bytes depend on the content only. Staging already dropped links and
    special files (``ppo_course.submission_rules.stage_submission``).

    Raises:
        NotADirectoryError: if ``root`` is not a folder.
    """
    root = Path(root)
    if not root.is_dir():
        raise NotADirectoryError(f"staged submission {root} is not a folder")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
            info = zipfile.ZipInfo(path.relative_to(root).as_posix(), date_time=_FIXED_ZIP_TIME)
            info.external_attr = 0o100644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, path.read_bytes())
    return buf.getvalue()


def unpack_submission(data: bytes, dest: Path) -> None:
    """Write the files of :func:`pack_submission`'s bytes under the empty or new folder ``dest``.

    The bytes come from the TA's batch, which staged them within its limits;
    the paths are checked all the same (no absolute path, no ``..``, no link).

    Raises:
        ValueError: on an unreadable archive or a path that would leave ``dest``.
    """
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as exc:
        raise ValueError(f"the submission's bytes are not a zip archive ({exc})") from None
    with zf:
        for info in zf.infolist():
            parts = info.filename.split("/")
            if info.filename.startswith("/") or "\\" in info.filename or ".." in parts or "" in parts:
                raise ValueError(f"the submission's archive holds the path {info.filename!r}, outside its folder")
            out = dest.joinpath(*parts)
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(zf.read(info))


# ------------------------------------------------------------------ this node


def worker_fingerprint() -> str:
    """``grader.fingerprint.grader_fingerprint()`` of this node's files, now (about 10 ms).

    Computed for every task, not once per worker: the grading process of each
    task imports the files as they are then, so a node upgraded under a running
    worker is judged by what will actually grade.
    """
    from grader.fingerprint import grader_fingerprint

    return grader_fingerprint()


def node_isolation() -> dict[str, bool]:
    """Which sandbox features this node grants, probed once per process.

    Runs ``sandbox_child.zygote.probe`` in a fresh Python
    process (as the fork server that forks the students' children would), so
    the answer is the kernel's, for this user. A probe that cannot run counts
    as granting nothing.
    """
    global _ISOLATION
    with _STATE_LOCK:
        if _ISOLATION is None:
            code = "import json; from sandbox_child.zygote import probe; print(json.dumps(probe()))"
            try:
                done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                                      stdin=subprocess.DEVNULL)
                _ISOLATION = {k: bool(v) for k, v in json.loads(done.stdout.strip().splitlines()[-1]).items()}
            except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
                _ISOLATION = {}
        return dict(_ISOLATION)


def grading_root() -> Path:
    """This node's folder for staged submissions and scratch, shared by every worker process of this user.

    ``<temp dir>/ppo-course-cluster-<uid>`` with ``staging/`` and ``work/`` inside, mode 0700 (under
    /tmp it is also out of the children's sight: they get a private /tmp).

    Raises:
        PermissionError: if the folder exists but is not this user's own, private folder (someone else
            made it first, or it is a link).
    """
    root = Path(tempfile.gettempdir()) / f"ppo-course-cluster-{os.getuid()}"
    try:
        root.mkdir(mode=0o700)
    except FileExistsError:
        pass
    st = os.lstat(root)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise PermissionError(f"{root} is not a private folder of this user (mode {stat.filemode(st.st_mode)}, "
                              f"owner {st.st_uid}); remove it and restart the worker")
    for sub in ("staging", "work"):
        (root / sub).mkdir(mode=0o700, exist_ok=True)
    return root


def _address() -> str:
    try:
        from distributed import get_worker

        return get_worker().address
    except (ImportError, ValueError):
        return ""


def node_secret() -> tuple[str | None, str]:
    """``(digest of this node's grader secret, "")``, or ``(None, why)`` when it has none it may use."""
    from grader.course_secret import GraderSecretError, secret_digest

    try:
        return secret_digest(), ""
    except GraderSecretError as exc:
        return None, str(exc)


def secret_refusal(wanted: str | None) -> str | None:
    """Why this node's grader secret cannot grade for a client whose secret's digest is ``wanted``, or None."""
    digest, why = node_secret()
    if digest is None:
        return (f"this node has no grader secret it may use ({why}); install the course's with "
                "`ppo-course secret show --value | ssh NODE ppo-course secret init --from -` (docs/cluster.md)")
    if wanted is not None and digest != wanted:
        return (f"its grader secret (digest {digest}) is not the client's (digest {wanted}): another course's or "
                "an old one; install the course's secret there (`ppo-course secret init --from`, docs/cluster.md)")
    return None


def refusal(fingerprint: str, secret_digest: str | None = None) -> str | None:
    """Why this node must not grade for a client whose grader fingerprint is ``fingerprint``, or None.

    Args:
        fingerprint: the client's ``grader_fingerprint()`` (16 hex characters).
        secret_digest: the digest of the client's grader secret (None: not compared, only required).
    """
    why = secret_refusal(secret_digest)
    if why:
        return why
    mine = worker_fingerprint()
    if mine != fingerprint:
        return (f"its grader fingerprint is {mine}, the client's is {fingerprint}: another version of "
                "ppo-course (grader, reference or student runtime) would grade differently; install the "
                "client's exact version on every worker node")
    granted = node_isolation()
    missing = [f.replace("_", " ") for f in REQUIRED_ISOLATION if not granted.get(f)]
    if missing:
        return (f"this node cannot isolate student code (the kernel refuses a {' and a '.join(missing)}), "
                "so it would run it unconfined; run the worker as root or on a kernel with unprivileged "
                "user namespaces (docs/cluster.md, 'What each node needs')")
    return None


def worker_report() -> dict:
    """This node's fingerprint, grader secret's digest and isolation, for the client's check at connection
    (``Client.run``); without a usable secret, ``secret`` is None, ``secret_problem`` says why and the
    fingerprint (which includes the secret's digest) is ``""``."""
    digest, why = node_secret()
    return {"fingerprint": worker_fingerprint() if digest else "", "secret": digest, "secret_problem": why,
            "isolation": node_isolation(), "python": sys.version.split()[0]}


# ------------------------------------------------------------------ the task


_POOLS: dict = {}
_POOLS_LOCK = threading.Lock()


def _runner(root: Path) -> Runner:
    """This Dask worker process's warm graders (``grader.runners.warm.WarmPool``, one per Dask thread), or a fresh worker.

    One pool per process, kept for the life of the Dask worker: its warm workers
    watch this process and die with it. ``PPO_COURSE_WARM_WORKERS=0`` grades each task in a fresh worker.
    """
    from grader.runners.warm import WarmPool, warm_workers_enabled
    from grader.runners.workers import run_worker

    if not warm_workers_enabled():
        return run_worker
    with _POOLS_LOCK:
        pool = _POOLS.get("pool")
        if pool is None:
            pool = _POOLS["pool"] = WarmPool(root / f"warm-{os.getpid()}")
        return pool.run


def grade_task(archive: bytes, request_json: str) -> str:
    """Grade one staged submission on this Dask worker; returns a ``grader.runners.runner.WorkerOutcome`` as JSON.

    Args:
        archive: :func:`pack_submission` bytes of the staged submission.
        request_json: the client's ``grader.intake.request.GradeRequest`` as JSON: its ``student_id``
            starts the folder name the submission is unpacked under (``<id>.<random>``: two batches may
            grade the same id on one node at once); its ``fingerprint`` (the client's
            ``grader_fingerprint()``) must be this node's; profile, exercises, ``timeout_s`` and the
            limits are those of a local worker (the clock starts on this node).

    Returns:
        ``WorkerOutcome.model_dump_json()``, ``worker`` this Dask worker's address.

    Raises:
        WorkerRefused: another grader fingerprint here, or no isolation (nothing is graded).
        ValueError: bytes that are not a submission archive, or a request that does not validate.
    """
    request = GradeRequest.model_validate_json(request_json)
    student_id = request.student_id
    address = _address()
    why = refusal(request.fingerprint or "", request.secret_digest)
    if why:
        raise WorkerRefused(address, why)
    if not student_id or "/" in student_id or "\0" in student_id or student_id in (".", ".."):
        raise ValueError(f"{student_id!r} is not a student id")
    root = grading_root()
    # Every task of this node stages beside the others, in one folder: the sandbox covers a
    # submission's parent folder (other students), so no child sees a classmate graded at the same time.
    prefix = student_id.encode()[:200].decode("utf-8", "ignore") + "."  # + 8 random: within 255 bytes
    submission = Path(tempfile.mkdtemp(prefix=prefix, dir=root / "staging"))
    scratch = Path(tempfile.mkdtemp(prefix=prefix, dir=root / "work"))
    try:
        unpack_submission(archive, submission)
        outcome = _runner(root)(request.model_copy(update={"submission": submission}), scratch)
        # The runner already validated the worker's result.json into the typed GradeResult.
        return outcome.model_copy(update={"seconds": round(outcome.seconds, 3), "worker": address}).model_dump_json()
    finally:
        shutil.rmtree(submission, ignore_errors=True)
        shutil.rmtree(scratch, ignore_errors=True)

