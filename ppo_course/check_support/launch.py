"""Run the public tests in child processes for ``ppo-course check``, restarting after a child dies.

The student's code never runs in the process that prints the summary: each run is a child, either

* a fresh interpreter (``python -m ppo_course.check_support.runner``; every platform), or
* on POSIX, a fork of a *warm* parent that has already imported torch, pytest and the grading kit
  (``warm_up``; ``check --watch``), so that a re-run costs the tests, not the imports. The student's
  modules are never imported in the parent, so each fork imports them afresh.

Either child gets a CPU-time limit (``RLIMIT_CPU``) and a wall-clock backstop. When a child dies in a
test (a hang that ignores the per-call limit, a crash in native code), that test fails with what it
was calling, and a fresh child runs the remaining ones (``MAX_RESTARTS``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ppo_course.check_support.request import CheckRequest
from ppo_course.check_support.results import CheckRun, TestOutcome

#: Fresh child processes started after one died (each one is charged to a single test).
MAX_RESTARTS = 20
#: Exit statuses of a child stopped by its CPU-time limit (SIGXCPU) or killed (SIGKILL), raw or via a shell.
_STOPPED = (-24, 152, -9, 137)


@dataclass
class ChildExit:
    """How one child ended: ``returncode`` (negative: a signal; None: stopped at the wall-clock
    ``timed_out`` seconds) and what it printed (``stdout``)."""

    returncode: int | None
    stdout: bytes
    timed_out: float | None = None


def _limit_cpu(seconds: int) -> None:
    """Set RLIMIT_CPU of this (child) process; nothing where it is unavailable or a lower hard limit stands."""
    try:
        import resource
    except ImportError:  # Windows: no resource module
        return
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 5))
    except (ValueError, OSError):
        pass


def child_env() -> dict[str, str]:
    """The environment of a test child (one thread, no .pyc files written in the student's folder); the request
    itself travels as one ``CheckRequest``, never in the environment."""
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1",
               # pytest's plugins installed beside it (anyio pulling in trio, xdist, typeguard...) cost ~1 CPU-s
               # at start-up and serve no public test: the child loads only what `pytest_args` names.
               PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    # The child must import this very ppo_course (also from a source checkout that is not installed).
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    return env


def spawn_fresh(request: CheckRequest, env: dict[str, str], cwd: str, cpu_seconds: int, timeout: float) -> ChildExit:
    """Run the runner on ``request`` in a fresh interpreter (the request as one ``--request JSON`` argument)."""
    kwargs: dict = {"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT, "cwd": cwd, "env": env}
    if os.name == "posix":
        kwargs["preexec_fn"] = lambda: _limit_cpu(cpu_seconds)
    cmd = [sys.executable, "-m", "ppo_course.check_support.runner", "--request", request.model_dump_json()]
    try:
        proc = subprocess.run(cmd, timeout=timeout, **kwargs)
        return ChildExit(proc.returncode, proc.stdout or b"")
    except subprocess.TimeoutExpired as exc:
        return ChildExit(None, exc.stdout or b"", timeout)


def warm_up() -> None:
    """Import, in this process, what every test child needs (torch, pytest, hypothesis, the grading kit),
    so that ``spawn_forked`` children start with them loaded. Imports no student module."""
    import hypothesis  # noqa: F401
    import pytest  # noqa: F401
    import torch
    import torch.fx.experimental.symbolic_shapes  # noqa: F401 - autograd.grad imports it (and sympy) on first use
    # torch.optim's first optimizer imports torch._dynamo (its __init__ is wrapped by torch._disable_dynamo): ~1.7 s
    # CPU of every forked exercise-7 run otherwise (measured: 3.0 -> 1.3 s CPU per `check --watch` re-run).
    import torch._dynamo  # noqa: F401

    import ppo_course.check_support.local  # noqa: F401
    import ppo_course.check_support.runner  # noqa: F401
    import ppo_course.grading_kit.collect  # noqa: F401
    import ppo_course.grading_kit.compare  # noqa: F401
    import ppo_course.grading_kit.diagnoses  # noqa: F401
    import ppo_course.grading_kit.inputs  # noqa: F401

    torch.set_num_threads(1)


def can_fork() -> bool:
    """Whether ``spawn_forked`` is available (POSIX)."""
    return hasattr(os, "fork") and os.name == "posix"


def spawn_forked(request: CheckRequest, env: dict[str, str], cwd: str, cpu_seconds: int, timeout: float) -> ChildExit:
    """Run the runner on ``request`` (the object itself) in a fork of this (warm) process; its output goes to a file
    in ``cwd``."""
    out_path = Path(cwd) / "child-output.txt"
    sys.stdout.flush()
    sys.stderr.flush()
    with open(out_path, "wb") as out:
        pid = os.fork()
        if pid == 0:  # the child: never returns
            code = 1
            try:
                os.dup2(out.fileno(), 1)
                os.dup2(out.fileno(), 2)
                os.chdir(cwd)
                os.environ.clear()
                os.environ.update(env)
                _limit_cpu(cpu_seconds)
                from ppo_course.check_support import runner

                code = runner.run(request)
            except BaseException:  # noqa: BLE001 - reported to the parent through the output file
                import traceback

                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
    deadline = time.monotonic() + timeout
    timed_out = None
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
            timed_out = timeout
            break
        time.sleep(0.005)
    code = None if timed_out is not None else os.waitstatus_to_exitcode(status)
    return ChildExit(code, out_path.read_bytes(), timed_out)


def _test_doc(nodeid: str) -> str:
    """The first docstring line of the public test `nodeid` ("test_ex1_ratio.py::test_x[...]"), read with ast."""
    import ast

    from ppo_course.public_tests import PUBLIC_TESTS_DIR

    file, _, name = nodeid.partition("::")
    try:
        tree = ast.parse((PUBLIC_TESTS_DIR / Path(file).name).read_text(encoding="utf-8"))
    except (OSError, SyntaxError):
        return ""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name.split("[")[0]:
            return ((ast.get_docstring(node) or "").strip().splitlines() or [""])[0]
    return ""


def died_outcome(nodeid: str, function: str, end: ChildExit, call_seconds: float, cpu_seconds: int) -> TestOutcome:
    """The failed outcome of the test during which a child process died (or was stopped)."""
    file, _, name = nodeid.partition("::")
    who = f"`{function}`" if function else "your code"
    if end.timed_out is not None:
        diagnosis = "timeout"
        detail = f"{who} did not return within {end.timed_out:g} s (an endless loop?); the test run was stopped"
    elif end.returncode in _STOPPED:  # SIGXCPU / SIGKILL: the CPU-time limit
        diagnosis = "timeout"
        detail = (f"{who} did not return within {cpu_seconds:g} s (an endless loop?); the process hit its "
                  f"CPU-time limit (it may ignore the per-call limit of {call_seconds:g} s, e.g. with a bare except)")
    else:
        diagnosis = "crash"
        detail = f"the process running {who} ended (exit status {end.returncode}): a crash in native code?"
    return TestOutcome(exercise=Path(file).stem.removeprefix("test_"), test=name.split("[")[0],
                       doc=_test_doc(nodeid), passed=False, diagnosis=diagnosis,
                       detail=detail + "; the remaining tests ran in a fresh process", items=1, failed_items=[nodeid])


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _died_outside_tests(end: ChildExit, timeout: float) -> str:
    """The run-level error of a child that died outside any test (with what it printed last)."""
    if end.timed_out is not None:
        return f"the tests ran past {timeout:g} s of wall-clock time (an endless loop?)"
    tail = end.stdout.decode("utf-8", "replace").strip().splitlines()[-15:]
    why = f"exit status {end.returncode}"
    if end.returncode is not None and (end.returncode < 0 or end.returncode in (152, 137)):
        why += " (stopped: CPU-time limit or a crash)"
    return f"the test run died ({why}):\n" + "\n".join(tail)


def run_public_tests(exercises_dir: Path, stems: list[str], cpu_seconds: int = 120, timeout: float = 600.0,
                     call_seconds: float | None = None, forked: bool = False) -> CheckRun:
    """Run the public tests of ``stems`` on ``exercises_dir`` in child processes; the typed results.

    Each call into the student's code has a CPU-time limit (``call_seconds``, default
    ``guard.CALL_CPU_SECONDS``); when a child still dies, the test it was running fails with what it was
    calling, and a fresh child runs the remaining tests. ``forked``: fork this process (``warm_up`` first)
    instead of starting a fresh interpreter.

    Raises nothing for a failing student module: a crash outside any test, or a missing result, becomes
    ``CheckRun.error`` (with what the child printed last).
    """
    from ppo_course.check_support.guard import CALL_CPU_SECONDS

    call_seconds = CALL_CPU_SECONDS if call_seconds is None else float(call_seconds)
    spawn = spawn_forked if forked and can_fork() else spawn_fresh
    run = CheckRun()
    deselect: list[str] = []
    hung: list[str] = []  # functions that took a child down: not called again
    with tempfile.TemporaryDirectory(prefix="ppo-check-") as tmp:
        out_json = Path(tmp) / "outcomes.json"
        progress = Path(tmp) / "outcomes.json.progress"
        env = child_env()
        for _ in range(MAX_RESTARTS + 1):
            for f in (out_json, progress):
                f.unlink(missing_ok=True)
            request = CheckRequest(exercises_dir=exercises_dir, out_json=out_json, stems=list(stems),
                                   call_seconds=call_seconds, deselect=deselect, hung=hung)
            end = spawn(request, env, tmp, cpu_seconds, timeout)
            data = _read_json(out_json)
            for o in data.get("outcomes", []):
                run.add_outcome(TestOutcome.from_dict(o))
            run.add_modules(data.get("modules", {}))
            run.printed_lines += int(data.get("printed_lines", 0) or 0)
            if data.get("pytest_exit") is not None:
                return run
            now = _read_json(progress)
            if not now.get("nodeid") or now["nodeid"] in data.get("done", []):  # outside any test
                if run.outcomes and now.get("nodeid"):  # after its last test (at the session's end): results stand
                    return run
                run.outcomes, run.error = [], _died_outside_tests(end, timeout)
                return run
            run.add_outcome(died_outcome(now["nodeid"], now.get("function", ""), end, call_seconds, cpu_seconds))
            deselect += [*data.get("done", []), now["nodeid"]]
            if now.get("function") and (end.timed_out is not None or end.returncode in _STOPPED):
                hung.append(now["function"])
    run.error = f"the test run died {MAX_RESTARTS + 1} times; the remaining tests did not run"
    return run
