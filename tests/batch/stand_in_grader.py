"""A fast, deterministic stand-in for ``grader.grade.grade_submission`` (batch-mechanics tests only).

Why a stand-in: the batch tests kill, resume and regrade whole cohorts many
times over; with the real hidden graders each run would take minutes on the
two shared cores. The stand-in honours the documented interface
(``grade_submission(path, *, exercises=None, profile=...) -> GradeResult``)
and returns the real ``grader.records.results.GradeResult`` model, so the results.json
the batch handles has the real schema. The demo test (test_demo.py) uses the
real grader.

Scoring, per exercise module found at the submission's root or under one top
folder: two tests of 1 point. ``test_value`` fails when the source holds
``BUG_VALUE`` (diagnosis ``max_instead_of_min``); ``test_grad`` fails on
``BUG_GRAD`` (diagnosis ``ratio_detached``). A module with a NUL byte is
"broken" (0). Markers that act on the grading process itself:
``STANDIN_HANG`` sleeps forever, ``STANDIN_CRASH`` kills the process,
``STANDIN_SLOW`` sleeps 0.4 s. ``STANDIN_GRADER_ERROR`` stands for a fault of the grader's side (a module
the hidden tests need missing, the reference raising, a sandbox that cannot import torch): that module's
tests fail with the diagnosis ``grader_error``, as the real grader reports them.

How a batch reaches it (tests only; production code has no switch for it): :func:`install`
replaces ``grader.runners.workers.worker_command`` in the test's process with a command whose boot
code first sets ``grader.runners.worker_process.grading_function`` (and the warm worker's warm-up) to the
stand-in, then runs the ordinary worker. Everything else (staging, limits, environment
allow-list, time-outs, warm pools, the cluster's checks) is the production path.
"""

from __future__ import annotations

import importlib.util
import os
import time
from pathlib import Path

#: The stand-in of this module, as :func:`install` takes it.
STAND_IN = "stand_in_grader:grade_submission"

from grader.points import EXERCISES
from grader.records.results import ExerciseResult, GradeResult, TestResult


def _root(path: Path) -> Path:
    entries = [p for p in path.iterdir() if not p.name.startswith(".")]
    if not any(p.suffix == ".py" for p in entries) and len(entries) == 1 and entries[0].is_dir():
        return entries[0]
    return path


def stand_in_command(spec: str, real):
    """A ``grader.runners.workers.worker_command`` whose workers grade with ``spec`` ("module:function") instead.

    The worker's environment is this process's (less ``PYTHON*``, read when a worker starts), so a
    stand-in may read the test's variables; its module is found where this process finds it.
    """
    module, _, attr = spec.partition(":")

    def command(mode: str) -> list[str]:
        cmd = real(mode)
        i = cmd.index("-c") + 1
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        found = importlib.util.find_spec(module.split(".")[0])
        if found is not None and found.origin:
            paths.insert(0, str(Path(found.origin).parent))
        boot = (f"import os, sys, importlib\nos.environ.update({env!r})\nsys.path[:0] = {paths!r}\n"
                "import grader.runners.worker_process\n"
                f"grader.runners.worker_process.grading_function = lambda: getattr(importlib.import_module({module!r}), {attr!r})\n"
                # A warm worker's warm-up: what the stand-in's first grading imports (the result models
                # import the sandbox's package, torch with it), so that no student's clock pays for it.
                f"grader.runners.worker_process.warm_up = lambda optimiser=True: [importlib.import_module(m) for m in ({module!r}, 'grader.sandbox.errors')]\n")
        return [*cmd[:i], boot + cmd[i], *cmd[i + 1:]]

    command.stand_in = spec
    command.real = real
    return command


def install(spec: str = STAND_IN, monkeypatch=None) -> None:
    """Make every batch worker of this process grade with ``spec`` (with ``monkeypatch``: until the test ends).

    Also ``PPO_COURSE_BATCH_OWN_FORKSERVER=1``: a stand-in forks no student child, so the batch
    starts no shared fork server for it (a fork server imports torch: seconds per batch).
    """
    import grader.runners.workers as workers

    real = getattr(workers.worker_command, "real", workers.worker_command)
    command = stand_in_command(spec, real)
    if monkeypatch is not None:
        monkeypatch.setattr(workers, "worker_command", command)
        monkeypatch.setenv(workers.OWN_FORKSERVER_ENV, "1")
    else:
        workers.worker_command = command
        os.environ[workers.OWN_FORKSERVER_ENV] = "1"


def grade_submission(request, *, exercises=None, profile="full", **kw) -> GradeResult:
    """Grade ``request`` (a ``GradeRequest``, as a worker passes it, or a path) with the stand-in rules of the
    module docstring."""
    if hasattr(request, "submission"):
        path, exercises, profile = Path(request.submission), request.exercises, request.profile
    else:
        path = Path(request)
    root = _root(path)
    stems = [s for s in EXERCISES if not exercises or s in exercises]
    results: dict[str, ExerciseResult] = {}
    tests: list[TestResult] = []
    any_py = any(root.rglob("*.py"))
    for stem in stems:
        module = root / f"{stem}.py"
        if not module.is_file():
            results[stem] = ExerciseResult(score=0, max_score=2, status="missing", message=f"{stem}.py not found")
            continue
        source = module.read_bytes()
        if b"\x00" in source:
            results[stem] = ExerciseResult(score=0, max_score=2, status="broken", message="cannot import: NUL byte")
            continue
        if b"STANDIN_HANG" in source:
            time.sleep(10_000)
        if b"STANDIN_CRASH" in source:
            os._exit(3)
        if b"STANDIN_SLOW" in source:
            time.sleep(0.4)
        if b"STANDIN_GRADER_ERROR" in source:
            for test in ("test_value", "test_grad"):
                tests.append(TestResult(exercise=stem, kind="hidden", test=test, score=0.0, max_score=1.0,
                                        status="failed", output="the grader failed", visibility="after_published",
                                        diagnosis="grader_error"))
            results[stem] = ExerciseResult(score=0, max_score=2, status="graded")
            continue
        score = 0.0
        for test, marker, diagnosis in (("test_value", b"BUG_VALUE", "max_instead_of_min"),
                                        ("test_grad", b"BUG_GRAD", "ratio_detached")):
            ok = marker not in source
            score += ok
            tests.append(TestResult(exercise=stem, kind="hidden", test=test, score=float(ok), max_score=1.0,
                                    status="passed" if ok else "failed",
                                    output="" if ok else f"wrong ({diagnosis})", visibility="after_published",
                                    diagnosis=None if ok else diagnosis))
        results[stem] = ExerciseResult(score=score, max_score=2, status="graded")
    return GradeResult(submission=str(path), status="graded" if any_py else "rejected",
                       message="" if any_py else "the submission is empty", grader_version="stand-in",
                       profile=profile, exercises=results, tests=tests)
