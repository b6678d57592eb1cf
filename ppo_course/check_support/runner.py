"""Child-process entry of `ppo-course check`: run the public tests on a folder of exercise modules.

    python -m ppo_course.check_support.runner --request JSON

The request is one ``request.CheckRequest`` (the folder, OUT_JSON, the stems, the
per-call CPU limit, the tests already run and the functions that hung). Imports
the student's modules in this process (their own code, on their own machine; the
parent only reads OUT_JSON), runs `ppo_course/public_tests/` with pytest and
writes a JSON list of outcomes (see `collect.Outcome`). The exit status is 0
whenever the tests ran, whatever they found.

Each call into the student's code runs under `guard.CallGuard` (a CPU-time
limit per call, output captured per test). OUT_JSON is rewritten after every
test, and OUT_JSON + ".progress" names the test and function running now, so
that the parent can tell which one hung if this process dies, and start a
fresh one for the remaining tests (with those already run in ``deselect`` and
the functions that hung in ``hung``).
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

from ppo_course.atomic_files import atomic_write_text
from ppo_course.check_support.request import CheckRequest
from ppo_course.public_tests import PUBLIC_TESTS_DIR
from ppo_course.syllabus import EXERCISES


def public_test_files(stems: list[str] | tuple[str, ...] = EXERCISES) -> list[Path]:
    """The public test modules for the given exercise stems (those that exist)."""
    return [PUBLIC_TESTS_DIR / f"test_{stem}.py" for stem in stems if (PUBLIC_TESTS_DIR / f"test_{stem}.py").is_file()]


def _write_json(path: Path, data: dict) -> None:
    """Write `data` to `path` atomically (the parent may read it after this process was killed)."""
    atomic_write_text(path, json.dumps(data))


class _Progress:
    """pytest plugin: resets the guard's output per test, keeps each test's printed output with its
    outcome, and rewrites OUT_JSON after every test (with the test and function running now in
    OUT_JSON.progress)."""

    def __init__(self, guard, collector, out_json: Path, provider=None):
        self.guard = guard
        self.provider = provider
        self.collector = collector
        self.out_json = out_json
        self.progress = out_json.with_name(out_json.name + ".progress")
        self.nodeid = ""
        self.done: list[str] = []
        self.guard.on_call = self.calling

    def calling(self, name: str) -> None:
        """Note the function about to run (read by the parent if this process dies)."""
        self.progress.write_text(json.dumps({"nodeid": self.nodeid, "function": name}), encoding="utf-8")

    def pytest_runtest_logstart(self, nodeid, location):
        self.nodeid = nodeid
        self.guard.output.reset()
        self.calling("")

    def pytest_runtest_logfinish(self, nodeid, location):
        self.done.append(nodeid)
        out = self.guard.output
        o = self.collector.by_nodeid.get(nodeid)
        if o is not None:
            o.printed_lines += out.lines
            if out.chars:
                if nodeid in o.failed_items and not o.output:
                    o.output = out.text()
                elif not o.passed_output:
                    o.passed_output = out.text()
        self.write()

    def write(self, code: int | None = None) -> None:
        from ppo_course.check_support.results import module_reports_json

        modules = module_reports_json(self.provider.modules) if self.provider is not None else {}
        _write_json(self.out_json, {"pytest_exit": code, "done": self.done,
                                    "outcomes": [o.to_dict() for o in self.collector.results()],
                                    "modules": modules, "printed_lines": self.guard.output.total_lines})


def run(request: CheckRequest) -> int:
    """Run the public tests the ``request`` names; write the outcomes to ``request.out_json``. Returns 0."""
    import pytest
    import torch

    from ppo_course.grading_kit.collect import OutcomeCollector, pytest_args
    from ppo_course.check_support.guard import CallGuard
    from ppo_course.check_support.local import LocalProvider

    torch.set_num_threads(1)
    guard = CallGuard(request.call_seconds)
    guard.timed_out.update(request.hung)
    provider = LocalProvider(str(request.exercises_dir), guard=guard)
    collector = OutcomeCollector(provider.classify_and_record)
    progress = _Progress(guard, collector, request.out_json, provider)
    files = public_test_files(request.stems or EXERCISES)
    args = pytest_args(files, PUBLIC_TESTS_DIR, request.deselect)
    log = io.StringIO()
    # pytest's own report is noise to a student: the parent prints the collected outcomes.
    with contextlib.redirect_stdout(log):
        code = pytest.main(args, plugins=[provider, collector, progress]) if files else 5
    progress.write(int(code))
    return 0


def main(argv: list[str] | None = None) -> int:
    """Command-line entry (see the module docstring): ``--request JSON``; 2 on a missing or invalid request."""
    import argparse

    import pydantic

    parser = argparse.ArgumentParser(prog="python -m ppo_course.check_support.runner")
    parser.add_argument("--request", required=True, help="the CheckRequest as JSON")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    try:
        request = CheckRequest.model_validate_json(args.request)
    except pydantic.ValidationError as exc:
        print(f"invalid check request: {exc}", file=sys.stderr)
        return 2
    return run(request)


if __name__ == "__main__":
    from ppo_course.process_exit import run_and_exit

    run_and_exit(main)  # the results file is written; torch's teardown would cost the student ~0.5 CPU-s
