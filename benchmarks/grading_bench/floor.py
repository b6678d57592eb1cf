"""The floor: the grader's own tests run in one warm process on trusted, directly imported modules.

What grading cannot avoid is running the tests: the same public and hidden
test files that ``grader.grade`` selects (``ppo_course/public_tests`` and
``grader/hidden``, the same pytest arguments, the same ``OutcomeCollector``),
with the student's functions called on the same inputs. The floor does exactly
that in one long-lived process, with a provider (``TrustedProvider``) that
imports the student's modules here instead of loading them into sandboxed
children: no fork server, no child per module, no round trips, no worker
start per student. It is a benchmark's yardstick, never a grader: the
modules run unconfined, so only trusted submissions (the demo cohort's
well-behaved students) may be given to it.

Two uses:

* ``python -m grading_bench.floor --warmup DIR STUDENT_DIR...`` (with
  ``benchmarks/`` on ``PYTHONPATH``): grades DIR once untimed, then each
  student once, printing one JSON line per student
  ``{"student", "cpu_s", "wall_s", "score", "max_score", "exercises"}``
  (CPU-seconds of this process, RUSAGE_SELF + RUSAGE_CHILDREN);
* ``run_exercise(stem)`` in a notebook's test cell (the nbgrader course of
  ``grading_bench.nbgrader_course``): the same tests of one exercise against
  the modules written beside the notebook.

Exercise 7's known-good mode (its main points) is served as the sandbox
serves it: while the student's ``ex7_ppo_step`` is imported and called, the
names ``ex1_ratio`` ... ``ex6_kl_reward`` resolve to stand-in modules holding
the reference's functions and classes (``grader.sandbox.KnownGood``'s table).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib.util
import io
import json
import resource
import sys
import time
import traceback
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# The exercise-7 training run, left out by the "fast" profile (as grader.grade.SLOW_TESTS).
SLOW_TESTS = {("ex7_ppo_step", "hidden", "test_training_run_raises_mean_score")}


def _hidden_dir() -> Path:
    try:
        from grader.grade import HIDDEN_DIR
        return Path(HIDDEN_DIR)
    except ImportError:  # the pipeline is being restructured: the hidden tests stay in grader/hidden
        return ROOT / "grader" / "hidden"


def _public_dir() -> Path:
    from ppo_course.public_tests import PUBLIC_TESTS_DIR

    return PUBLIC_TESTS_DIR


def _slow_tests() -> set:
    try:
        from grader.grade import SLOW_TESTS as slow
        return set(slow)
    except ImportError:
        return SLOW_TESTS


def pytest_args(files: list[Path], deselect: list[str]) -> list[str]:
    """The pytest arguments of ``grader.grade`` (the grading kit's one list, rooted where grade roots it)."""
    from ppo_course.grading_kit.collect import pytest_args as grading_args

    return grading_args(files, ROOT, deselect)


def module_root(folder: Path) -> Path:
    """Where a submission's modules are: the folder itself, or its one top folder (as the sandbox finds it)."""
    folder = Path(folder).resolve()
    if any(folder.glob("*.py")):
        return folder
    subdirs = [p for p in folder.iterdir() if p.is_dir() and not p.name.startswith((".", "__"))]
    return subdirs[0] if len(subdirs) == 1 else folder


class _Namespace:
    """The modules one load sees under their bare names (stand-ins and the student's own imports).

    While installed (``with ns:``), ``sys.modules`` maps each name to this
    load's module and the submission folder is first on ``sys.path``; modules
    imported from the folder meanwhile join the namespace; afterwards
    ``sys.modules`` and ``sys.path`` are as they were.
    """

    def __init__(self, root: Path, modules: dict[str, types.ModuleType] | None = None) -> None:
        self.root = root
        self.modules = dict(modules or {})
        self._saved: list = []

    def _ours(self, module: object) -> bool:
        path = getattr(module, "__file__", None)
        try:
            return path is not None and self.root in Path(path).resolve().parents
        except (OSError, ValueError):
            return False

    def __enter__(self) -> "_Namespace":
        saved = {name: sys.modules.get(name) for name in self.modules}
        sys.modules.update(self.modules)
        sys.path.insert(0, str(self.root))
        # sys.modules is a dict: modules imported meanwhile are appended after position n (cheaper than a
        # set difference on every call: the hidden tests make hundreds of calls per student).
        self._saved.append((saved, len(sys.modules)))
        return self

    def __exit__(self, *exc) -> None:
        saved, n = self._saved.pop()
        with contextlib.suppress(ValueError):
            sys.path.remove(str(self.root))
        if len(sys.modules) != n:
            for name in list(sys.modules)[n:]:
                module = sys.modules[name]
                if self._ours(module):
                    self.modules[name] = module
                    del sys.modules[name]
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


@functools.lru_cache(maxsize=None)
def _trusted_module_class():
    from ppo_course.check_support.local import LocalModule

    class TrustedModule(LocalModule):
        """``LocalModule`` (the provider surface of ``ppo-course check``) whose calls run in its namespace."""

        def __init__(self, module: types.ModuleType, namespace: _Namespace) -> None:
            super().__init__(module)
            self._namespace = namespace

        def __getattr__(self, name: str):
            call = super().__getattr__(name)

            def in_namespace(*args, **kwargs):
                with self._namespace:
                    return call(*args, **kwargs)

            return in_namespace

        def new(self, class_name: str, *args, **kwargs):
            with self._namespace:
                return super().new(class_name, *args, **kwargs)

        def call_with_grad(self, *args, **kwargs):
            with self._namespace:
                return super().call_with_grad(*args, **kwargs)

        def ppo_step_harness(self, *args, **kwargs):
            with self._namespace:
                return super().ppo_step_harness(*args, **kwargs)

        def modified_inputs(self, *args, **kwargs):
            with self._namespace:
                return super().modified_inputs(*args, **kwargs)

    return TrustedModule


class TrustedProvider:
    """pytest plugin: the student's modules imported into this process (the floor's provider).

    The same surface as the grader's sandbox provider (``load(stem, known_good)``,
    ``classify``, ``error_name``, ``profile``), without a sandbox: only for
    trusted modules. Each load (stem, known-good key) imports its modules
    afresh in its own namespace, as each sandboxed child does.

    Args:
        submission_dir: the submission folder (modules at its root or under one top folder).
        profile: "full" or "fast".
    """

    is_student_provider = True

    def __init__(self, submission_dir: str | Path, profile: str = "full") -> None:
        from ppo_course.check_support.local import LocalProvider

        self.root = module_root(Path(submission_dir))
        self.profile = profile
        self._modules: dict[tuple, object] = {}
        self._trusted_module = _trusted_module_class()
        self.classify = LocalProvider.classify
        self.error_name = LocalProvider.error_name

    def load(self, stem: str, known_good=False):
        """The student's module `stem`; `known_good` True (ex1-ex6 served by the reference) or a KnownGood table.

        Raises:
            ModuleUnavailable: "module_missing" or "module_broken" (cached, as the sandbox provider does).
        """
        from ppo_course.grading_kit.provider import ModuleUnavailable

        key = (stem, known_good if isinstance(known_good, bool) else id(known_good))
        if key not in self._modules:
            self._modules[key] = self._import(stem, known_good)
        got = self._modules[key]
        if isinstance(got, ModuleUnavailable):
            raise got
        return got

    def _stand_ins(self, known_good) -> dict[str, types.ModuleType]:
        if known_good is False:
            return {}
        from grader.sandbox import KnownGood

        table = KnownGood.reference() if known_good is True else known_good
        out = {}
        for stem, names in table.table.items():
            module = types.ModuleType(stem, f"known-good stand-in for {stem}")
            for name, value in names.items():
                setattr(module, name, value)
            out[stem] = module
        return out

    def _import(self, stem: str, known_good):
        from ppo_course.grading_kit.provider import ModuleUnavailable

        path = self.root / f"{stem}.py"
        if not path.is_file():
            return ModuleUnavailable("module_missing", f"{path.name} is not in the submission")
        namespace = _Namespace(self.root, self._stand_ins(known_good))
        namespace.modules.pop(stem, None)
        try:
            with namespace:
                spec = importlib.util.spec_from_file_location(stem, path)
                module = importlib.util.module_from_spec(spec)
                sys.modules[stem] = module  # siblings importing it get this very module
                spec.loader.exec_module(module)
            return self._trusted_module(module, namespace)
        except BaseException as exc:  # a broken import must not stop the other exercises
            if isinstance(exc, KeyboardInterrupt):
                raise
            text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            return ModuleUnavailable("module_broken", f"importing {path.name} failed: {text}")

    def close(self) -> None:
        """Forget every loaded module (nothing of this student stays in ``sys.modules``)."""
        self._modules.clear()


def run_tests(provider: TrustedProvider, stems: list[str]) -> dict:
    """Run the public and hidden tests of `stems` (as ``grader.grade`` selects them) against `provider`.

    Returns:
        ``{(stem, kind, test name): Outcome}`` from ``OutcomeCollector``.
    """
    import pytest

    from ppo_course.grading_kit.collect import OutcomeCollector

    files = []
    hidden = _hidden_dir()
    for stem in stems:
        for f in (_public_dir() / f"test_{stem}.py", hidden / f"test_{stem}.py"):
            if f.is_file():
                files.append(f)
    deselect = []
    if provider.profile == "fast":
        deselect = [f"{hidden / f'test_{stem}.py'}::{name}" for stem, kind, name in _slow_tests() if stem in stems]
    collector = OutcomeCollector(provider.classify)
    log = io.StringIO()
    with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
        pytest.main(pytest_args(files, deselect), plugins=[provider, collector])
    return dict(collector.outcomes)


def scores(outcomes: dict, stems: list[str], profile: str) -> dict[str, dict[str, float]]:
    """``{stem: {"score", "max_score", "passed", "tests"}}`` from ``grader/points.yaml`` (a test function
    earns its points when every parametrisation passed; a test that did not run earns nothing)."""
    from grader.points import load_points, shows_work

    points = load_points()
    slow = _slow_tests()
    out = {}
    for stem in stems:
        score = max_score = 0.0
        passed = total = 0
        for kind in ("public", "hidden"):
            for name, entry in getattr(points.exercises[stem], kind).items():
                if profile == "fast" and (stem, kind, name) in slow:
                    continue
                outcome = outcomes.get((stem, kind, name))
                ok = outcome is not None and outcome.passed
                max_score += entry.points
                # a public test's points count only when its hidden twins pass (grader.points)
                # ... and a property test's points only when the value tests it requires show work
                counts = points.exercises[stem].counted(kind, name, ok, lambda twin, stem=stem: (
                    outcomes.get((stem, "hidden", twin)) is not None and outcomes[(stem, "hidden", twin)].passed),
                    lambda req, stem=stem: (outcomes.get((stem, "hidden", req)) is not None
                                            and shows_work(outcomes[(stem, "hidden", req)].passed,
                                                           outcomes[(stem, "hidden", req)].diagnosis)))
                score += entry.points if counts else 0.0
                passed += ok
                total += 1
        out[stem] = {"score": round(score, 6), "max_score": round(max_score, 6), "passed": passed, "tests": total}
    return out


def grade_trusted(submission_dir: Path, profile: str) -> dict:
    """Grade one trusted submission in this process: ``{"score", "max_score", "exercises": {stem: ...}}``.

    Exercises whose module is absent score 0 without running (as ``grader.grade`` does)."""
    from ppo_course.syllabus import EXERCISES

    provider = TrustedProvider(submission_dir, profile)
    present = [s for s in EXERCISES if (provider.root / f"{s}.py").is_file()]
    try:
        outcomes = run_tests(provider, present) if present else {}
    finally:
        provider.close()
    per = scores(outcomes, list(EXERCISES), profile)
    for stem in EXERCISES:
        if stem not in present:
            per[stem]["score"], per[stem]["passed"] = 0.0, 0
    return {"score": round(sum(v["score"] for v in per.values()), 6),
            "max_score": round(sum(v["max_score"] for v in per.values()), 6), "exercises": per}


def _cpu_s() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


# -- the notebook's test cells ------------------------------------------------------------------------
_NOTEBOOK_PROVIDER: TrustedProvider | None = None


def run_exercise(stem: str, profile: str = "full", folder: str | Path = ".") -> None:
    """One autograded notebook cell: the public and hidden tests of `stem` against the module beside the notebook.

    Raises:
        AssertionError: when any test of the exercise fails (nbgrader scores the cell all or nothing).
    """
    global _NOTEBOOK_PROVIDER
    if _NOTEBOOK_PROVIDER is None:
        _NOTEBOOK_PROVIDER = TrustedProvider(Path(folder), profile)
    outcomes = run_tests(_NOTEBOOK_PROVIDER, [stem])
    got = scores(outcomes, [stem], profile)[stem]
    print(f"{stem}: {got['passed']}/{got['tests']} tests passed, {got['score']:g}/{got['max_score']:g} points")
    assert got["passed"] == got["tests"], f"{got['tests'] - got['passed']} test(s) of {stem} failed"


def main(argv: list[str] | None = None) -> int:
    """The floor worker: warm up on one submission, then grade each submission once, timed (JSON lines)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("students", type=Path, nargs="+", help="submission folders (trusted code only)")
    parser.add_argument("--warmup", type=Path, required=True, help="graded once, untimed, first")
    parser.add_argument("--profile", choices=["full", "fast"], default="full")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)  # as the graders' conftest does
    cpu0, wall0 = _cpu_s(), time.monotonic()
    grade_trusted(args.warmup, args.profile)
    print(json.dumps({"warmup": args.warmup.name, "cpu_s": _cpu_s() - cpu0, "wall_s": time.monotonic() - wall0}),
          flush=True)
    for folder in args.students:
        cpu0, wall0 = _cpu_s(), time.monotonic()
        result = grade_trusted(folder, args.profile)
        print(json.dumps({"student": folder.name, "cpu_s": _cpu_s() - cpu0, "wall_s": time.monotonic() - wall0,
                          **result}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
