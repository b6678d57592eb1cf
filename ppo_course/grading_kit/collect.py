"""A pytest plugin that records each grader test's outcome with its diagnosis.

Used in-process by the hidden grader (`grader/grade.py`) and inside the child
process of `ppo-course check`. Outcomes are aggregated per test *function*
(all parametrisations of a test must pass to earn its points) and keyed by
(exercise, kind, function name), the keys of `grader/points.yaml`.

A test module declares `EXERCISE = "<module stem>"` and `KIND = "hidden"` or
`"public"`. `pytest_args` is the one argument list of such a run (the hidden
grader's and `ppo-course check`'s alike).
"""

from __future__ import annotations

import os
import traceback
import zlib
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pytest

from ppo_course.grading_kit.feedback import Mismatch

#: Parts of a file path that mark test machinery, left out of any traceback shown in feedback.
FRAMEWORK_FILES = ("pluggy", "_pytest", "/inspect.py", "hypothesis", "/grader/sandbox/", "/ppo_course/sandbox/",
                   "/sandbox_child/", "/check_support/", "/grading_kit/", "/site-packages/torch/")


def _install_roots() -> tuple[str, ...]:
    """Folders whose absolute paths depend on where the course is checked out or installed, longest first:
    the folder holding the ``ppo_course`` package (the checkout, or site-packages), ``sys.prefix`` and
    ``sys.base_prefix`` (the venv and the interpreter)."""
    import sys

    roots = {str(Path(__file__).resolve().parents[2]), sys.prefix, sys.base_prefix}
    return tuple(sorted((r.rstrip("/") + "/" for r in roots if r and r != "/"), key=len, reverse=True))


def portable_paths(text: str) -> str:
    """`text` with every install root (`_install_roots`) cut from the paths it names: a traceback in
    feedback reads ``ppo_course/public_tests/test_ex5_rollout_buffer.py``, the same from any checkout
    (the grader's absolute checkout path would make feedback differ by the folder the grader
    lives in, and tell students where it is)."""
    for root in _install_roots():
        text = text.replace(root, "")
    return text

def doc_summary(doc: str | None, limit: int = 300) -> str:
    """What a test checks, for the student: its docstring's first sentence on one line.

    The sentence may wrap over several source lines: it is kept whole, never cut at a line end. One longer
    than ``limit`` characters ends at the last word that fits, with " …". "" for no docstring.
    """
    import inspect

    words = inspect.cleandoc(doc or "").split("\n\n", 1)[0].split()
    text = ""
    for i, word in enumerate(words):
        text = f"{text} {word}" if text else word
        nxt = words[i + 1] if i + 1 < len(words) else ""
        if word.endswith(".") and nxt[:1].isupper() and not word.endswith(("e.g.", "i.e.", "eq.", "Eq.")):
            break  # the end of the first sentence
    if len(text) > limit:
        text = text[: limit - 2].rsplit(" ", 1)[0].rstrip(",;:") + " …"
    return text


def pytest_args(files: Iterable[Path | str], rootdir: Path | str, deselect: Iterable[str] = ()) -> list[str]:
    """The arguments of one grading pytest run: independent of the caller's folder, config files and plugins.

    The collector (`OutcomeCollector`) records outcomes and diagnoses itself, so pytest's own reporting
    (tracebacks, log capture, gc passes for unraisable exceptions) would only cost time: ``--tb=no`` alone
    saves ~4 CPU-s on a stub. Installed plugins that no test here uses are not loaded (anyio's imports trio,
    ~0.1 CPU-s). Output is captured at the ``sys`` level (the hidden grader's sandbox and
    `check`'s call guard capture what student code prints themselves).

    Args:
        files: the test modules to run (paths).
        rootdir: pytest's root and conftest boundary (the folder above the test folders).
        deselect: node ids to leave out (``"path::test_name"``); a path under ``rootdir`` may be absolute: it is
            made relative to ``rootdir``, as pytest's node ids are (pytest compares ``--deselect`` as a prefix of the
            node id, so an absolute path would deselect nothing).

    Returns:
        The argument list for ``pytest.main``.
    """
    root = str(rootdir)
    args = [*map(str, files), "-q", "--no-header", "-p", "no:cacheprovider", "-p", "no:randomly", "-p", "no:xdist",
            "-p", "no:xdist.looponfail", "-p", "no:anyio", "-p", "no:typeguard", "-p", "no:platformdirs",
            "-p", "no:unraisableexception", "-p", "no:threadexception", "-p", "no:logging",
            "--capture=sys", "--assert=plain", "--tb=no", "--rootdir", root, "--confcutdir", root, "-o", "addopts=",
            "-W", "ignore::DeprecationWarning"]
    for nodeid in deselect:
        args += ["--deselect", _relative_nodeid(str(nodeid), root)]
    return args


def _relative_nodeid(nodeid: str, root: str) -> str:
    """``nodeid`` with its path made relative to ``root`` (POSIX separators) when it is an absolute path under it."""
    path, sep, rest = nodeid.partition("::")
    if os.path.isabs(path):
        rel = os.path.relpath(path, root)
        if not rel.startswith(os.pardir):
            path = Path(rel).as_posix()
    return path + sep + rest


Classifier = Callable[[BaseException], "tuple[str, str] | None"]

try:  # Python ≥ 3.11
    _GROUP: type | tuple = BaseExceptionGroup  # noqa: F821
except NameError:  # Python 3.10: hypothesis depends on the backport
    try:
        from exceptiongroup import BaseExceptionGroup as _GROUP
    except ImportError:
        _GROUP = ()


@dataclass
class Outcome:
    """The aggregated outcome of one test function (all its parametrisations)."""

    exercise: str
    kind: str
    test: str
    doc: str = ""
    passed: bool = True
    diagnosis: str | None = None
    detail: str = ""  # expected vs got, the failing example: shown for public tests only
    finding: str = ""  # a sentence with no input or expected value (Mismatch.finding): shown for hidden tests too
    fitted: str = ""  # the fitted family's claim behind the diagnosis (Mismatch.fitted), "" when none
    items: int = 0
    failed_items: list[str] = field(default_factory=list)
    # `ppo-course check` only (the graders never show what student code printed):
    output: str = ""  # what the code printed during the first failing item (capped)
    passed_output: str = ""  # what it printed during a passing item (capped; shown with --show-output)
    printed_lines: int = 0  # lines printed over all items of this test

    def to_dict(self) -> dict:
        """Plain dict (JSON-ready)."""
        return asdict(self)


def _notes(exc: BaseException) -> str:
    """Hypothesis' notes ('Falsifying example: ...') attached to the exception, if any."""
    return "\n".join(str(n) for n in getattr(exc, "__notes__", []) or [])


def _leaves(group: BaseException) -> list[BaseException]:
    """The non-group exceptions inside a (nested) exception group, in order."""
    if not isinstance(group, _GROUP):
        return [group]
    out: list[BaseException] = []
    for member in group.exceptions:
        out += _leaves(member)
    return out


def _finding(exc: BaseException, diagnosis: str | None) -> tuple[str, str]:
    """(`Mismatch.finding`, `Mismatch.fitted`) of the failure that named `diagnosis` (in an exception group: its
    first such member); ("", "") when none did."""
    for leaf in _leaves(exc):
        if isinstance(leaf, Mismatch) and leaf.diagnosis == diagnosis:
            return leaf.finding, leaf.fitted
    return "", ""


class OutcomeCollector:
    """pytest plugin (register under any name) collecting `Outcome`s in `self.outcomes`.

    Args:
        classify: maps an exception raised by student code (or by the provider) to
            (diagnosis id, detail); returns None for anything it does not know, which
            is then treated as a grader error.
    """

    def __init__(self, classify: Classifier):
        self.classify = classify
        self.outcomes: dict[tuple[str, str, str], Outcome] = {}
        self.by_nodeid: dict[str, Outcome] = {}

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        """Seed the global random generators of this (grading) process before each test and its fixtures.

        A test that draws without a generator (``torch.randn(2, 3)`` in the hidden tests' malformed-input
        checks) otherwise got whatever the process's earlier work left: another student's grading in a
        warm grader, or torch's random start-up seed in a fresh one. The seed comes
        from the test file's and function's names only, so every run on every machine draws the same.
        """
        from ppo_course.sandbox.seeding import seed_globals

        seed_globals(zlib.crc32(f"{item.path.name}::{item.name}".encode()))

    def _outcome(self, item: pytest.Item) -> Outcome:
        module = item.module
        exercise = getattr(module, "EXERCISE", module.__name__.rsplit(".", 1)[-1].removeprefix("test_"))
        kind = getattr(module, "KIND", "hidden")
        test = item.originalname if getattr(item, "originalname", None) else item.name.split("[")[0]
        key = (exercise, kind, test)
        if key not in self.outcomes:
            self.outcomes[key] = Outcome(exercise=exercise, kind=kind, test=test, doc=doc_summary(item.function.__doc__))
        self.by_nodeid[item.nodeid] = self.outcomes[key]
        return self.outcomes[key]

    def diagnose_exception(self, exc: BaseException) -> tuple[str, str]:
        """(diagnosis, detail) for an exception that failed a test.

        An exception group (hypothesis reports a flaky or multiple failure that way, e.g. a
        crash on the first run and a "no further calls" on the replay) is diagnosed by its
        first member that names a mistake.
        """
        if isinstance(exc, _GROUP):
            for member in _leaves(exc):
                diagnosis, detail = self.diagnose_exception(member)
                if diagnosis != "grader_error":
                    return diagnosis, detail
        if isinstance(exc, Mismatch):
            diagnosis, detail = exc.diagnosis, f"{exc.what}:\n{exc.detail}" if exc.detail else exc.what
        else:
            found = self.classify(exc)
            if found is not None:
                diagnosis, detail = found
            elif isinstance(exc, AssertionError):
                diagnosis, detail = "wrong_value", str(exc)
            else:
                diagnosis = "grader_error"
                # The test's own frames (public tests are public); never pytest's, pluggy's, inspect's,
                # hypothesis' or the sandbox's machinery (noise to a student, and not theirs to fix).
                frames = [f for f in traceback.extract_tb(exc.__traceback__)
                          if not any(x in f.filename.replace("\\", "/") for x in FRAMEWORK_FILES)]
                detail = portable_paths("".join(traceback.format_list(frames[-5:]))
                                        + "".join(traceback.format_exception_only(type(exc), exc)))[-3000:]
        notes = _notes(exc) if diagnosis not in ("wrong_signature", "timeout") else ""
        if notes:
            detail = f"{detail}\n{notes}".strip()
        return diagnosis, detail

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo):
        """Record setup/call failures (with the diagnosis) and passes of each test item."""
        result = yield
        report = result.get_result()
        outcome = self._outcome(item)
        if call.when == "setup":
            outcome.items += 1
        if report.failed or (report.skipped and call.when != "teardown"):
            if item.nodeid in outcome.failed_items:
                return
            outcome.failed_items.append(item.nodeid)
            if outcome.passed:  # the first failure of a function names its diagnosis
                outcome.passed = False
                if call.excinfo is not None and not report.skipped:
                    outcome.diagnosis, outcome.detail = self.diagnose_exception(call.excinfo.value)
                    outcome.finding, outcome.fitted = _finding(call.excinfo.value, outcome.diagnosis)
                else:  # a skip never hides a failure: it earns nothing
                    outcome.diagnosis, outcome.detail = "grader_error", f"skipped: {report.longrepr}"

    def results(self) -> list[Outcome]:
        """Outcomes in collection order."""
        return list(self.outcomes.values())
