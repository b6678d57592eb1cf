"""Grade one submission with the hidden (and public) graders: `grade_submission`.

    from grader.grade import grade_submission
    result = grade_submission("alice.zip")          # a folder or a .zip
    result.write_results_json("results.json"); result.write_feedback("feedback.md")

The tests run in this (trusted) process with `pytest.main` and two plugins: a
`SandboxProvider` (student modules live in sandboxed children, never here) and
an `OutcomeCollector` (outcome + diagnosis per test). Scores come from
`grader/points.yaml`. Grading is deterministic: hypothesis is derandomised with
no example database and no deadline, torch uses one thread, tests run in a
fixed order, and timings are kept under `extra_data.timing` only.

A missing or broken module scores 0 for its exercise and nothing else; an empty folder is graded 0 with a
message; a path that is neither a folder nor a readable .zip is "rejected" (score 0, the reason in `message`).
"""

from __future__ import annotations

import ast
import contextlib
import functools
import io
import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from grader.intake.request import GradeRequest, request_of
from ppo_course.public_tests import PUBLIC_TESTS_DIR
from ppo_course.submission_rules import SubmissionLimits
from grader.points import PointsConfig, load_points, shows_work
from grader.records.results import ExerciseResult, GradeResult, TestResult
from ppo_course.grading_kit.diagnoses import DIAGNOSES
from ppo_course.grading_kit.states import ExerciseState, import_failure_state
from ppo_course.syllabus import EXERCISES

if TYPE_CHECKING:
    from grader.hidden.provider import SandboxProvider

HIDDEN_DIR = Path(__file__).resolve().parent / "hidden"
REPO_ROOT = HIDDEN_DIR.parent.parent  # pytest's root: above grader/hidden/ and ppo_course/public_tests/

# The slow part of exercise 7, skipped by profile="fast" (load tests).
SLOW_TESTS = {("ex7_ppo_step", "hidden", "test_training_run_raises_mean_score")}

class Unreadable(Exception):
    """The submission cannot be read at all (missing path, corrupt or unsafe zip)."""


@contextlib.contextmanager
def _submission_folder(path: Path, intake_limits=None, staged: bool = False):
    """Yield the staged submission (``ppo_course.submission_rules``: the one intake of every path) and where its modules are.

    ``staged``: ``path`` is a folder the intake staged already (a batch's worker): read where it is
    (``already_staged``: its NUL-byte notes, as restaging it would give), never copied again.

    Yields:
        ``(module folder, where, notes)``: the one folder holding the exercise modules at any depth, its
        path inside the submission ("." for the top), and the intake's notes (files it skipped).

    Raises:
        Unreadable: the intake rejected it (size, zip bomb, links out, ambiguous layout ...), with the reason.
    """
    from ppo_course.submission_layout import locate_modules, staged as staged_copy
    from ppo_course.submission_rules import Rejected, already_staged

    try:
        copying = contextlib.nullcontext(already_staged(path)) if staged else staged_copy(path, intake_limits)
        with copying as copy:
            found = locate_modules(copy.root)
            yield found.root, found.where, copy.notes
    except Rejected as exc:
        raise Unreadable(str(exc)) from None


def _uncounted_note(kind: str, prerequisites: list[str]) -> str:
    """Why a passed test is worth 0 for now (grader/points.yaml: a public test's twins, a hidden test's `requires`)."""
    names = ", ".join(f"`{t}`" for t in prerequisites)
    if kind == "public":
        return f"\n0 points for now: a public test's points count once its hidden twin passes too ({names})."
    return (f"\n0 points for now: this property counts once your function computes the values ({names}: "
            "right, or wrong with a value computed from its inputs); a function that computes nothing has it as well.")


def _test_output(kind: str, doc: str, passed: bool, diagnosis: str | None, detail: str, finding: str = "") -> str:
    """What the student reads for one test: hidden tests never show inputs or expected values.

    ``finding`` (a grader-made sentence: a fitted parameter against the call's, or where the outputs
    differ; no input or expected value) is shown for a hidden test; a public test's detail holds it.
    """
    head = doc or "(no description)"
    if passed:
        return f"Passed: {head}"
    lines = [f"Failed: {head}"]
    if diagnosis:
        lines.append(f"Diagnosis [{diagnosis}]: {DIAGNOSES.get(diagnosis, DIAGNOSES['wrong_value'])}")
    if kind == "hidden" and finding:
        from ppo_course.text_safety import cap

        lines.append(cap(finding.strip()))
    if kind == "public" and detail:
        from ppo_course.text_safety import cap

        lines.append(cap(detail.strip()))
    elif diagnosis in ("raises_error", "missing_name") and detail:
        # Only an allowed built-in type name is shown; the message could echo a hidden input, so it is not.
        from grader.sandbox.errors import ALLOWED_EXCEPTION_NAMES

        type_name = detail.split(":", 1)[0].strip()
        if type_name in ALLOWED_EXCEPTION_NAMES:
            lines.append(f"(your code raised {type_name})")
    return "\n".join(lines)


@functools.lru_cache(maxsize=None)
def test_docs(stem: str, kind: str) -> dict[str, str]:
    """{test name: its docstring's summary (`doc_summary`)} of one grader module, read with `ast` (nothing is imported)."""
    from ppo_course.grading_kit.collect import doc_summary

    folder = PUBLIC_TESTS_DIR if kind == "public" else HIDDEN_DIR
    path = folder / f"test_{stem}.py"
    if not path.is_file():
        return {}
    docs = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            docs[node.name] = doc_summary(ast.get_docstring(node))
    return docs


def _zero_exercise(stem: str, points: PointsConfig, state: ExerciseState, message: str, diagnosis: str,
                   profile: str) -> tuple[ExerciseResult, list[TestResult]]:
    """Every test of `stem` failed for one reason (missing or broken module)."""
    ex = points.exercises[stem]
    tests = []
    max_score = 0.0
    for kind in ("public", "hidden"):
        for name, entry in getattr(ex, kind).items():
            if profile == "fast" and (stem, kind, name) in SLOW_TESTS:
                continue
            max_score += entry.points
            doc = test_docs(stem, kind).get(name, "")
            tests.append(TestResult(exercise=stem, kind=kind, test=name, score=0.0, max_score=entry.points,
                                    status="failed", output=_test_output(kind, doc, False, diagnosis, ""),
                                    visibility=ex.visibility(kind, name), diagnosis=diagnosis, tags=list(entry.tags),
                                    doc=doc))
    return ExerciseResult(score=0.0, max_score=max_score, state=state, message=message), tests


def grade_submission(submission: GradeRequest | str | os.PathLike, *, exercises: Iterable[str] | None = None,
                     profile: str = "full", limits=None, staged: bool = False) -> GradeResult:
    """Grade one submission (a folder or a .zip) with the hidden and public graders.

    Args:
        submission: the ``grader.intake.request.GradeRequest`` every runner carries (submission, profile,
            exercises, ``staged``, and the ``SubmissionLimits`` whose one wall-clock limit every sandboxed call,
            known-good callbacks included, counts against; None: the defaults). A path (a folder or .zip holding
            ``ex1_ratio.py`` ... at its root or under one top folder) is the shorthand for a request with
            ``exercises`` (default: all seven), ``profile`` ("fast" skips the slow exercise-7 training run,
            left out of score and max score) and ``staged`` (the intake staged it already); with a request
            these three must be left out.
        limits: ``grader.sandbox.Limits`` for the children (default limits otherwise).

    Returns:
        A `GradeResult` (status "graded" whatever the score; "rejected" with a message
        when the submission cannot be read at all).

    Raises:
        ValueError: on an unknown exercise stem or profile, or keywords given beside a request (a usage
            error, not the student's).
        grader.course_secret.GraderSecretError: no usable course secret to draw the hidden inputs from
            (a grader fault: raised before anything is graded, never a score).
    """
    request = request_of(submission, exercises, profile, staged)
    selected = list(EXERCISES) if request.exercises is None else [s for s in EXERCISES if s in request.exercises]
    from grader.hidden.draws import draws_key

    draws_key()  # the course's secret, read before any test: without one nothing is graded
    points = load_points()
    started = time.perf_counter()
    path = Path(request.submission)
    from grader.sandbox.submission_time import submission_deadline, submission_ran_out

    submission_limits = request.limits or SubmissionLimits()
    try:
        with submission_deadline(submission_limits.timeout_s), _submission_folder(
                path, submission_limits, request.staged) as (folder, where, notes):
            result = _grade_folder(folder, path, selected, points, request.profile, limits)
            result.out_of_time = submission_ran_out()
            found = ""
            if where != ".":
                found = f"Found your exercise modules in '{where}/' and graded them from there."
            result.message = " ".join(filter(None, [found, *notes, result.message]))
    except Unreadable as exc:
        result = unreadable_result(path, selected, points, request.profile, str(exc))
    result.timing["total_s"] = round(time.perf_counter() - started, 3)
    return result


def _exercise_state(tests: list[TestResult], failure) -> ExerciseState:
    """The typed state of an exercise whose module is present (``ppo_course.grading_kit.states``).

    Args:
        tests: the exercise's graded tests.
        failure: the sandbox's ``StudentImportError`` of the module's graded load, or None.

    Returns:
        ``syntax_error``/``import_error`` from the failure's (allow-listed) type name; else
        ``not_implemented`` when every test failed with that diagnosis; else ``graded``.
    """
    if failure is not None:
        return import_failure_state(failure.type_name)
    if tests and all(t.status != "passed" and t.diagnosis == "not_implemented" for t in tests):
        return "not_implemented"
    return "graded"


def _submitted_place(root: Path, failure) -> tuple[int | None, str | None]:
    """(line, file) of a SyntaxError at import, kept only where the submission really has that place.

    The child is hostile: ``compile(text, "any_name.py", "exec")`` or a crafted SyntaxError lets it
    report any identifier-like file name (100 characters) and any line (up to 10**6), a channel into
    results.json and the gradebook. The parent keeps them only when a ``.py`` file of that base name
    is in the submission (read here, in the trusted process) and the line is within it (its line
    count + 1: Python reports an unexpected end of file one past the last line); else (None, None).

    Args:
        root: the submission's module folder (staged, read-only to children).
        failure: the sandbox's ``StudentImportError``, or None.
    """
    if failure is None or failure.lineno is None or not failure.filename:
        return None, None
    lines = [len(p.read_bytes().splitlines()) for p in root.rglob(failure.filename)
             if p.is_file() and not p.is_symlink() and p.name == failure.filename]
    if not lines or failure.lineno > max(lines) + 1:
        return None, None
    return failure.lineno, failure.filename


def unreadable_result(path: Path, selected: list[str], points: PointsConfig, profile: str, why: str) -> GradeResult:
    """The result of a submission that cannot be read: status ``rejected``, every test of ``selected`` scored 0.

    Args:
        path: the submission (its name is the result's ``submission``).
        selected: the module stems graded; points: ``grader/points.yaml``; profile: ``"full"`` or ``"fast"``.
        why: the reason, quoted in the result's message.
    """
    exercises, tests = {}, []
    for stem in selected:
        ex, ex_tests = _zero_exercise(stem, points, "missing", "not graded: the submission could not be read",
                                      "module_missing", profile)
        exercises[stem] = ex
        tests += ex_tests
    return GradeResult(submission=path.name, status="rejected", message=f"The submission could not be read: {why}. "
                       "Submit a folder or a .zip holding your exercise modules (ex1_ratio.py ... ex7_ppo_step.py).",
                       grader_version=points.grader_version, profile=profile, exercises=exercises, tests=tests)


def _run_tests(root: Path, present: list[str], profile: str, limits) -> tuple[dict, dict[str, float], SandboxProvider]:
    """Run the public and hidden tests of the ``present`` exercises in one pytest session, student code in the sandbox.

    Returns:
        ``(outcomes, timing, provider)``: ``{(stem, kind, test): Outcome}`` from the collector, ``{"pytest_s": s}``,
        and the (closed) ``SandboxProvider``, which still knows each module's import failure.
    """
    from grader.heap import FreezeAfterImports, imports_unwatched
    from ppo_course.grading_kit.collect import OutcomeCollector, pytest_args

    with imports_unwatched():  # torch's import, with the collector off
        import pytest
        from grader.hidden.provider import SandboxProvider
    provider = SandboxProvider(root, limits=limits, profile=profile)
    collector = OutcomeCollector(provider.classify)
    files = []
    for stem in present:
        for f in (PUBLIC_TESTS_DIR / f"test_{stem}.py", HIDDEN_DIR / f"test_{stem}.py"):
            if f.is_file():
                files.append(f)
    deselect = []
    if profile == "fast":
        deselect = [f"{HIDDEN_DIR / f'test_{stem}.py'}::{name}" for stem, kind, name in SLOW_TESTS if stem in present]
    t0 = time.perf_counter()
    log = io.StringIO()
    try:
        with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
            pytest.main(pytest_args(files, REPO_ROOT, deselect), plugins=[provider, collector, FreezeAfterImports()])
    finally:
        provider.close()
    timing = {"pytest_s": round(time.perf_counter() - t0, 3)}
    return {k: o for k, o in collector.outcomes.items()}, timing, provider


def _exercise_tests(stem: str, points: PointsConfig, outcomes: dict, profile: str) -> list[TestResult]:
    """One ``TestResult`` per test of ``stem`` in ``points.yaml`` (the profile's), scored from its outcome.

    A test with no outcome did not run (``grader_error``); a passed public test's points count only with
    its hidden twins (grader/points.yaml).
    """
    ex_points = points.exercises[stem]
    ex_tests = []

    def hidden_passed(name: str) -> bool:
        o = outcomes.get((stem, "hidden", name))
        return o is not None and o.passed

    def hidden_worked(name: str) -> bool:
        o = outcomes.get((stem, "hidden", name))
        return o is not None and shows_work(o.passed, o.diagnosis)

    for kind in ("public", "hidden"):
        for name, entry in getattr(ex_points, kind).items():
            if profile == "fast" and (stem, kind, name) in SLOW_TESTS:
                continue
            o = outcomes.get((stem, kind, name))
            if o is None:
                passed, diagnosis, doc, detail = False, "grader_error", "", "this test did not run"
            else:
                passed, diagnosis, doc, detail = o.passed, o.diagnosis, o.doc, o.detail
            # A public test's points count only with its hidden twins (grader/points.yaml).
            counted = ex_points.counted(kind, name, passed, hidden_passed, hidden_worked)
            output = _test_output(kind, doc, passed, None if passed else diagnosis, detail,
                                  getattr(o, "finding", "") if o is not None else "")
            if passed and not counted:
                output += _uncounted_note(kind, entry.prerequisites)
            ex_tests.append(TestResult(
                exercise=stem, kind=kind, test=name, score=entry.points if counted else 0.0, max_score=entry.points,
                status="passed" if passed else "failed",
                output=output,
                visibility=ex_points.visibility(kind, name), diagnosis=None if passed else diagnosis,
                tags=list(entry.tags), doc=doc, waits_for=list(entry.prerequisites) if passed and not counted else [],
                # Hidden tests never show inputs or expected values, not even in the model.
                detail=detail if (kind == "public" and not passed) else "",
                finding=(getattr(o, "finding", "") or "") if (kind == "hidden" and not passed and o is not None) else ""))
    return ex_tests


def _exercise_result(stem: str, root: Path, ex_tests: list[TestResult], provider: SandboxProvider | None,
                     profile: str) -> ExerciseResult:
    """The ``ExerciseResult`` of a submitted exercise: its tests' sum, state, and import failure if any."""
    failure = provider.primary_import_failure(stem) if provider is not None else None
    ex_message = ""
    state = _exercise_state(ex_tests, failure)
    if failure is not None:
        ex_message = f"{stem}.py could not be imported, so every test of this exercise scores 0:\n\n    " + \
            str(failure).strip().replace("\n", "\n    ")
    elif profile == "fast" and any(s == stem for s, _, _ in SLOW_TESTS):
        ex_message = "Fast profile: the short training run was not graded (left out of the max score)."
    place = _submitted_place(root, failure)
    score = round(sum(t.score for t in ex_tests), 6)
    max_score = round(sum(t.max_score for t in ex_tests), 6)
    return ExerciseResult(
        score=score, max_score=max_score, message=ex_message, state=state,
        error_type=failure.type_name if failure is not None else "",
        error_line=place[0], error_file=place[1])


def _grade_folder(folder: Path, original: Path, selected: list[str], points: PointsConfig, profile: str,
                  limits) -> GradeResult:
    root = folder
    present = [s for s in selected if (root / f"{s}.py").is_file()]
    exercises: dict[str, ExerciseResult] = {}
    tests: list[TestResult] = []
    message = ""
    if not any(root.glob("*.py")):
        message = ("The submission holds no Python module: expected ex1_ratio.py ... ex7_ppo_step.py "
                   "in one folder. Every exercise scores 0.")
    timing: dict[str, float] = {}
    outcomes: dict = {}
    provider = None
    if present:
        outcomes, timing, provider = _run_tests(root, present, profile, limits)
        from grader.hidden.evidence import one_story

        one_story(outcomes)  # never two different fitted parameters for one exercise
    for stem in selected:
        if stem not in present:
            ex, ex_tests = _zero_exercise(stem, points, "missing", _missing_message(root, stem), "module_missing",
                                          profile)
            exercises[stem] = ex
            tests += ex_tests
            continue
        ex_tests = _exercise_tests(stem, points, outcomes, profile)
        exercises[stem] = _exercise_result(stem, root, ex_tests, provider, profile)
        tests += ex_tests
    return GradeResult(submission=original.name, status="graded", message=message,
                       grader_version=points.grader_version, profile=profile, exercises=exercises, tests=tests,
                       timing=timing)


def _missing_message(root: Path, stem: str) -> str:
    """The message of a missing module, naming the files that look like it (``ex4_gae.txt``) when there are any."""
    from ppo_course.submission_layout import near_misses

    found = near_misses(root, stem)
    if not found:
        return f"{stem}.py is not in the submission."
    return (f"{stem}.py is not in the submission; it holds {', '.join(repr(n) for n in found)}. The grader reads "
            f"{stem}.py only: rename the file (export a notebook as a .py file) and submit again.")
