"""``IsolatedGrade``: the nbgrader autograde step that scores notebooks outside the student's kernel.

nbgrader's own rule (``nbgrader.utils.determine_grade``) reads a test cell's
kernel output: an error or any stderr scores 0, a float result is partial
credit, and anything else is full credit. So a student who patches
``torch.allclose`` or the kernel's display would win, and a warning from
correct code would lose. This step, registered in the course's
``nbgrader_config.py`` between ``LimitOutput`` and ``SaveAutoGrades``,
replaces every autograded test cell's outputs with what the isolated grader
found, so that ``determine_grade`` only ever sees one ``execute_result``: the
earned points as a float, preceded by a stdout stream with the feedback.

How a notebook's code reaches the grader:

1. For every exercise notebook of the assignment, the module text is rebuilt
   from the *course source* notebook: locked cells from the source (whatever the
   student did to them), answer cells from the student's submitted notebook
   (first cell with the same ``grade_id``; empty if deleted).
2. The modules are written as ``ex*.py`` files into a temporary folder and
   graded by the per-student step of every path (``grader.student.grade_alone``
   in this process: sandboxed children, hidden tests in this trusted process),
   the very step behind ``ppo-course grade``, with the course's profile. Outcomes
   are cached per student code, so the submission is graded once for all its
   notebooks; a grader fault fails the autograde (never a 0).
3. Each exercise test cell gets the outcome's ``exercises[stem].score`` (0 when it timed out); each quiz
   test cell gets 1 or 0 from ``grader.platforms.nbgrader_course.quiz.grade_answers``.
   Any other grade cell gets an error output (0 points) and a log line: a cell
   the course does not know is never full credit.

Feedback never shows hidden inputs or expected values (``TestResult.output``
is written that way), and tests whose visibility is ``hidden`` are summarised
as a count.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from pathlib import Path

import nbformat
from traitlets import Float, Unicode

from nbgrader.preprocessors import NbGraderPreprocessor

_CACHE: dict[str, object] = {}  # sha256 of (profile, modules) -> StudentOutcome; one autograde run grades once


def _meta(cell) -> dict:
    return cell.get("metadata", {})


def _grade_id(cell) -> str | None:
    return _meta(cell).get("nbgrader", {}).get("grade_id")


def read_notebook(path: Path):
    """Read an .ipynb as nbformat v4 (None if absent or unreadable: that notebook then counts as missing)."""
    try:
        return nbformat.read(str(path), as_version=4)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def rebuild_module(source_nb, student_nb, stem: str) -> str:
    """``stem``'s module text: locked cells from the course source, answer cells from the student.

    Args:
        source_nb: the course source notebook of the exercise (with solutions).
        student_nb: the student's submitted notebook, or None (then every answer cell is empty).
        stem: the module stem, e.g. ``"ex4_gae"``.
    """
    answers: dict[str, str] = {}
    if student_nb is not None:
        for cell in student_nb.cells:
            gid = _grade_id(cell)
            if gid and cell.cell_type == "code" and gid not in answers:
                answers[gid] = cell.source
    parts = []
    for cell in source_nb.cells:
        if cell.cell_type != "code" or _meta(cell).get("ppo_course", {}).get("module") != stem:
            continue
        nbg = _meta(cell).get("nbgrader", {})
        parts.append(answers.get(nbg.get("grade_id"), "") if nbg.get("solution") else cell.source)
    return "\n\n\n".join(parts) + "\n"


def _exercise_stems(source_nb) -> list[str]:
    return sorted({_meta(c).get("ppo_course", {}).get("module") for c in source_nb.cells} - {None})


def grade_modules(modules: dict[str, str], profile: str, timeout_s: float | None = None):
    """Grade ``{stem: module text}`` through the per-student step, in this process (cached per content, profile
    and time limit); returns the ``grader.records.outcome.StudentOutcome``.

    ``timeout_s``: the submission's one wall-clock limit (``ppo_course.submission_rules.SubmissionLimits``; its
    default when None), which every sandboxed call and known-good callback counts against. The step is
    ``grader.student.grade_alone`` with ``grader.runners.in_process.InProcessRunner``: the intake, time-out
    and fault rules of ``ppo-course grade``, ``grade-batch`` and Gradescope.

    Raises:
        RuntimeError: when this Python cannot grade (``grader.environment.environment_problem``:
            a package such as torch cannot be imported), or the grader itself failed on these modules (status
            ``grader_fault``): nbgrader then reports the autograde as failed for the student instead of
            recording a 0.
    """
    from grader.environment import environment_problem
    from grader.runners.in_process import InProcessRunner
    from grader.student import grade_alone
    from ppo_course.submission_rules import Entry, SubmissionLimits

    problem = environment_problem()
    if problem:
        raise RuntimeError(f"ppo-course cannot grade in this environment: {problem}; nothing was scored")

    limits = SubmissionLimits() if timeout_s is None else SubmissionLimits(timeout_s=timeout_s)
    key = hashlib.sha256(json.dumps([profile, limits.timeout_s, sorted(modules.items())]).encode()).hexdigest()
    if key not in _CACHE:
        with tempfile.TemporaryDirectory(prefix="ppo-nbgrader-") as tmp:
            folder = Path(tmp) / "submission"
            folder.mkdir()
            for stem, text in modules.items():
                (folder / f"{stem}.py").write_text(text, encoding="utf-8")
            outcome = grade_alone(Entry("submission", [folder], "dir"), limits=limits, profile=profile,
                                  exercises=None, runner=InProcessRunner())
        if outcome.fault:
            raise RuntimeError(f"ppo-course's grader itself failed on this submission ({outcome.message}); "
                               "nothing was scored: fix the grader, then autograde again")
        _CACHE[key] = outcome
    return _CACHE[key]


def exercise_feedback(result, stem: str) -> str:
    """The text shown above an exercise's score: per test passed/failed and why, hidden ones counted."""
    ex = result.exercises.get(stem)
    if ex is None:
        return f"{stem}: not graded."
    lines = [f"{stem}: {ex.score:g} / {ex.max_score:g} points (graded outside your kernel by ppo-course's "
             f"isolated grader, profile {result.profile!r})."]
    from ppo_course.text_safety import cap  # student-derived text: capped, no control characters (ANSI)

    if ex.message:
        lines.append(cap(ex.message))
    secret = [t for t in result.tests if t.exercise == stem and t.visibility == "hidden"]
    for t in (t for t in result.tests if t.exercise == stem and t.visibility != "hidden"):
        lines.append(f"- [{t.kind}] {t.test} ({t.score:g}/{t.max_score:g}): " + cap(t.output).replace("\n", "\n    "))
    if secret:
        lines.append(f"- {len(secret)} further hidden test(s): {sum(t.score for t in secret):g} / "
                     f"{sum(t.max_score for t in secret):g} points.")
    return "\n".join(lines) + "\n"


def exercise_points(outcome, stem: str, timeout_s: float) -> tuple[float, str]:
    """(points, feedback) of one exercise's grade cell, from :func:`grade_modules`'s outcome.

    A submission that ran out of its grading time (status ``timed-out``, the per-student step's rule,
    ``grader.student``) scores 0 with the reason, as ``grade-batch``, ``grade`` and Gradescope record it.
    ``timeout_s`` is the limit the outcome was graded under (kept for the callers; the reason names it).
    """
    if outcome.status == "timed-out":
        return 0.0, f"{stem}: 0 points: {outcome.message}; no partial score is given.\n"
    ex = outcome.result.exercises.get(stem)
    return (ex.score if ex is not None else 0.0), exercise_feedback(outcome.result, stem)


def _set_score(cell, points: float, feedback: str) -> None:
    """Replace the cell's outputs: feedback on stdout, then the points as the cell's only result."""
    count = cell.get("execution_count")
    cell.outputs = [
        nbformat.v4.new_output("stream", name="stdout", text=feedback),
        nbformat.v4.new_output("execute_result", data={"text/plain": repr(float(points))}, execution_count=count),
    ]


def _set_error(cell, why: str) -> None:
    from ppo_course.text_safety import cap

    why = cap(why, 2000)
    cell.outputs = [nbformat.v4.new_output("error", ename="NotGraded", evalue=why, traceback=[why])]


def _student_modules(source_dir: Path, submitted_dir: Path) -> dict[str, str]:
    """``{stem: source}`` of every exercise module of the course's notebooks, rebuilt from the student's
    notebook of the same name (``rebuild_module``); a missing notebook leaves its modules out (missing
    modules, as in ``ppo-course grade``)."""
    modules = {}
    for path in sorted(source_dir.glob("*.ipynb")):
        src = read_notebook(path)
        for stem in _exercise_stems(src) if src is not None else []:
            student = read_notebook(submitted_dir / path.name)
            if student is not None:  # a missing notebook is a missing module, as in `ppo-course grade`
                modules[stem] = rebuild_module(src, student, stem)
    return modules


def _quiz_answers(source_nb, nb) -> dict[str, str]:
    """``{question id: answer}`` from the student's notebook ``nb`` ("" where no answer cell)."""
    # Answer cells are found by grade_id as the source defines them (the student's metadata is
    # not trusted); nb is already sanitized, and the first cell of each id counts.
    answer_ids = {_grade_id(c): _meta(c)["ppo_course"]["quiz_answer"] for c in source_nb.cells
                  if "quiz_answer" in _meta(c).get("ppo_course", {})}
    answers = {qid: "" for qid in answer_ids.values()}
    seen: set[str] = set()
    for c in nb.cells:
        gid = _grade_id(c)
        if gid in answer_ids and gid not in seen and c.cell_type == "code":
            seen.add(gid)
            answers[answer_ids[gid]] = c.source
    return answers


class IsolatedGrade(NbGraderPreprocessor):
    """Score every autograded test cell from the isolated grader (see the module docstring).

    Config (``nbgrader_config.py``): ``c.IsolatedGrade.profile = "full" | "fast"``,
    ``c.IsolatedGrade.timeout_s = 600.0`` (one wall-clock limit per student),
    ``c.IsolatedGrade.secret_file`` (the course's grader secret; ``grader.course_secret``).
    """

    profile = Unicode("full", help="grade_submission profile: 'full', or 'fast' (skips the slow "
                                   "exercise-7 training run)").tag(config=True)
    timeout_s = Float(600.0, help="wall-clock seconds for grading one student's modules, the grader's work on "
                                  "their behalf included (ppo_course.submission_rules.SubmissionLimits.timeout_s)").tag(config=True)
    secret_file = Unicode("", help="the course's grader secret file (ppo-course nbgrader writes grader_secret in the "
                                   "course root); empty: $PPO_COURSE_SECRET_FILE, else the instructor's "
                                   "~/.config/ppo-course/grader_secret").tag(config=True)

    def preprocess(self, nb, resources):
        """Grade the whole submission once, then write each grade cell's score into its outputs."""
        from nbgrader.coursedir import CourseDirectory

        from grader.course_secret import use_secret_file

        use_secret_file(self.secret_file or None)  # this process's draws; nothing it starts inherits the path
        info = resources["nbgrader"]
        coursedir = CourseDirectory(parent=self)
        source_dir = Path(coursedir.format_path(coursedir.source_directory, ".", info["assignment"]))
        submitted_dir = Path(coursedir.format_path(coursedir.submitted_directory, info["student"], info["assignment"]))
        source_nb = read_notebook(source_dir / f"{info['notebook']}.ipynb")
        if source_nb is None:
            raise FileNotFoundError(f"IsolatedGrade: no course source notebook {info['notebook']}.ipynb in {source_dir}")
        graded = {_grade_id(c): _meta(c).get("ppo_course", {}) for c in source_nb.cells
                  if _meta(c).get("nbgrader", {}).get("grade") and _grade_id(c)}

        outcome = None
        if any("graded" in v for v in graded.values()):
            modules = _student_modules(source_dir, submitted_dir)
            self.log.info("IsolatedGrade: grading %s's modules %s (profile %s)", info["student"], sorted(modules),
                          self.profile)
            outcome = grade_modules(modules, self.profile, self.timeout_s)
        quiz = {}
        if any("quiz" in v for v in graded.values()):
            from grader.platforms.nbgrader_course.quiz import grade_answers

            quiz = grade_answers(_quiz_answers(source_nb, nb))

        for cell in nb.cells:
            if not _meta(cell).get("nbgrader", {}).get("grade") or cell.cell_type != "code":
                continue
            target = graded.get(_grade_id(cell), {})
            if "graded" in target and outcome is not None:
                stem = target["graded"]
                ex = outcome.result.exercises.get(stem)
                points, feedback = exercise_points(outcome, stem, self.timeout_s)
                cell_points = float(cell.metadata["nbgrader"]["points"])
                if ex is not None and abs(ex.max_score - cell_points) > 1e-9:
                    # points.yaml changed after the course was generated: regenerate it (`ppo-course nbgrader`).
                    self.log.warning("IsolatedGrade: %s is worth %g in the grader but %g in the notebook; "
                                     "the score is capped at the notebook's points", stem, ex.max_score, cell_points)
                _set_score(cell, min(points, cell_points), feedback)
            elif "quiz" in target:
                points, line = quiz.get(target["quiz"], (0.0, "not graded"))
                _set_score(cell, points, line + "\n")
            else:
                self.log.warning("IsolatedGrade: grade cell %r is not in the course source: scored 0", _grade_id(cell))
                _set_error(cell, "this grade cell is not part of the course source notebook")
        return nb, resources
