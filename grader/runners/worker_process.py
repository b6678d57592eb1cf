"""The worker's side of the process boundary: what runs in a worker process, fresh or warm.

TA side, trusted. The parent (``grader.runners.workers.worker_command``) starts every worker as
``python -I -c BOOT ... -- MODE``, which calls :func:`main` here:

    python -m grader.runners.worker_process worker --request JSON --out DIR [--parent-pid N]
    python -m grader.runners.worker_process serve [--parent-pid N]   (a warm worker: one request per stdin line)
    python -m grader.runners.worker_process fingerprint   (prints the workers' grader fingerprint and where it is)

Both modes grade with :func:`grade_request`: ``grader.grade.grade_submission`` on the request, the typed
result written to ``result.json`` (``grader.runners.runner.RESULT_FILE``). The student's code never runs
here, only in the sandbox's children. Protocol of ``serve`` (newline-delimited JSON): ``{"ready": pid}``
once warm; then per ``grader.intake.request.WarmRequest`` line, ``{"ok": true}`` once ``result.json`` is
written, or ``{"ok": false, "error": "..."}`` and exit 1 (a grader fault).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from grader.intake.request import GradeRequest, WarmRequest
from grader.runners.runner import RESULT_FILE
from ppo_course.atomic_files import atomic_write_text


def watch_parent(parent_pid: int) -> None:
    """Kill this worker's whole process group as soon as the batch that started it is gone (kill -9)."""

    def loop() -> None:
        while True:
            if os.getppid() != parent_pid:
                os.killpg(os.getpgrp(), signal.SIGKILL)
            time.sleep(0.2)

    threading.Thread(target=loop, daemon=True, name="watch-parent").start()


def grading_function() -> Callable:
    """The function a worker grades with: ``grader.grade.grade_submission`` (imported on first use)."""
    from grader.grade import grade_submission

    return grade_submission


def grade_request(request: GradeRequest, out: Path) -> None:
    """Grade one staged submission in this (worker) process; write the typed ``result.json`` (``GradeResult``).

    The one grading step of a fresh worker (:func:`worker_main`) and a warm one
    (``grader.runners.warm``). With ``request.deadline`` (an absolute ``time.monotonic()``), the
    limits' ``timeout_s`` becomes what is left of the batch's clock for this student.

    Raises:
        whatever the grader raises (a grader fault: the batch reports ``crashed``).
    """
    grade = grading_function()
    if request.limits is not None and request.deadline is not None:  # what is left of the batch's clock
        left = max(request.deadline - time.monotonic(), 0.001)
        request = request.model_copy(update={"limits": request.limits.model_copy(update={"timeout_s": left})})
    result = grade(request)
    # The typed result only: the parent (or a cluster node's runner) validates it back into GradeResult, and the
    # per-student step writes results.json and feedback.md from it, in one place.
    atomic_write_text(out / RESULT_FILE, result.model_dump_json())


def worker_main(argv: list[str]) -> int:
    """Entry of ``python -m grader.runners.worker_process worker``: grade one request, write its typed ``result.json``.

    Trusted side: imports the grader, which runs the student's code in its
    sandbox. Exit 0 after writing the file; any exception propagates
    (non-zero exit, traceback in the log) and the batch reports ``crashed``.
    """
    parser = argparse.ArgumentParser(prog="python -m grader.runners.worker_process worker")
    parser.add_argument("--request", required=True, help="the GradeRequest as JSON")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--parent-pid", type=int, default=None)
    args = parser.parse_args(argv)
    if args.parent_pid is not None:
        # Passed explicitly: had the batch died before this line, getppid() would already be 1.
        watch_parent(args.parent_pid)
    from grader.sandbox.forkserver_client import ForkServerClient

    ForkServerClient.start_early()  # a server of its own only without the batch's ($PPO_COURSE_FORKSERVER)
    from grader.hidden import disk_cache

    disk_cache.switch_on()  # the reference's answers on the hidden inputs, read from the grader's disk
    grade_request(GradeRequest.model_validate_json(args.request), args.out)
    return 0


def warm_up(optimiser: bool = True) -> None:
    """Import what every grading needs so that the first student does not pay it.

    ``optimiser``: also take one Adam step, which imports ``torch._dynamo`` and sympy (about 1.5 CPU-s). The
    full profile needs them at its first student (exercise 7's training run steps the reference's optimiser);
    the fast profile finds its reference steps in the graders' store (``grader.hidden.disk_cache``) and never
    imports them, so a fast batch warms without (``serve --no-optimiser``).
    """
    import hypothesis  # noqa: F401
    import pytest  # noqa: F401
    import torch

    import grader.grade  # noqa: F401
    import grader.hidden.provider  # noqa: F401
    import ppo_course.grading_kit.collect  # noqa: F401

    if not optimiser:
        return
    w = torch.nn.Parameter(torch.zeros(2))
    opt = torch.optim.Adam([w], lr=1e-3)
    (w.sum() ** 2).backward()
    opt.step()


def serve_main(argv: list[str]) -> int:
    """Entry of ``python -m grader.runners.worker_process serve``: a warm worker answering grading requests until stdin closes."""
    parser = argparse.ArgumentParser(prog="python -m grader.runners.worker_process serve")
    parser.add_argument("--parent-pid", type=int, default=None)
    parser.add_argument("--no-optimiser", action="store_true", help="warm up without an optimiser step (fast profile)")
    args = parser.parse_args(argv)
    if args.parent_pid is not None:
        watch_parent(args.parent_pid)
    # Replies go on the original stdout; anything printed from here on lands in the log (stderr).
    reply = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    from grader.hidden import disk_cache

    disk_cache.switch_on()  # the reference's answers on the hidden inputs, read from the grader's disk
    warm_up(optimiser=not args.no_optimiser)
    reply.write(json.dumps({"ready": os.getpid()}) + "\n")
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = WarmRequest.model_validate_json(line)
            os.environ.update(req.env)  # the batch's fork server (PPO_COURSE_FORKSERVER)
            grade_request(req.request, req.out)
        except Exception as exc:  # a grader fault: say so, log it, and leave (the pool starts a new worker)
            traceback.print_exc()
            sys.stderr.flush()
            reply.write(json.dumps({"ok": False, "error": f"{type(exc).__name__}: {exc}"[-500:]}) + "\n")
            return 1
        sys.stderr.flush()
        reply.write(json.dumps({"ok": True}) + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the worker named by ``argv[0]`` (``worker``, ``serve`` or ``fingerprint``: print the grader fingerprint
    and the grader's folder, as this worker imports them); exit 2 with a usage line otherwise."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["fingerprint"]:
        from grader.fingerprint import grader_fingerprint, package_root

        print(grader_fingerprint(), package_root("grader"))
        return 0
    if argv[:1] == ["worker"]:
        return worker_main(argv[1:])
    if argv[:1] == ["serve"]:
        return serve_main(argv[1:])
    print("usage: python -m grader.runners.worker_process {worker,serve} ... (worker: --request JSON --out DIR "
          "[--parent-pid N]; JSON: a grader.intake.request.GradeRequest)", file=sys.stderr)
    return 2


if __name__ == "__main__":
    from ppo_course.process_exit import run_and_exit

    run_and_exit(main)  # its outcome is written (atomically) before main returns
