"""A ready nbgrader course for the PPO chapter: ``build_course(course_dir)`` (``ppo-course nbgrader COURSE_DIR``).

Writes::

    COURSE_DIR/
      nbgrader_config.py           course root, ClearSolutions stub, the autograde pipeline with
                                   IsolatedGrade (and without Execute unless asked), the profile
      source/ppo_ch5/ex1_ratio.ipynb ... ex7_ppo_step.ipynb   one notebook per exercise (from solutions/)
      source/ppo_ch5/quiz.ipynb    the stop 1-8 quiz
      grader_secret                the course's grader secret (0600; a copy of the instructor's course
                                   secret, ``grader.course_secret``, made at first use; kept when the
                                   course is written again); never in source/ or release/

Then, in COURSE_DIR, nbgrader's usual verbs: ``nbgrader generate_assignment
ppo_ch5`` (the release: solutions removed by nbgrader, no hidden test ever in a
notebook), collect submissions into ``submitted/<student>/ppo_ch5/``,
``nbgrader autograde ppo_ch5``, ``nbgrader generate_feedback ppo_ch5``,
``nbgrader export``. Scores come from ``grader.grade.grade_submission`` run by
``IsolatedGrade`` outside the student's kernel (see ``autograde.py``); points
per exercise are the points config's (``grader/points.yaml``) for the chosen
profile. Due dates and late penalties are nbgrader's own settings.
"""

from __future__ import annotations

from pathlib import Path

ASSIGNMENT = "ppo_ch5"
QUIZ_NOTEBOOK = "quiz"

CONFIG_TEMPLATE = '''\
# nbgrader configuration of the PPO chapter course (written by `ppo-course nbgrader`).
# The autograde pipeline is nbgrader 0.9's default with two changes: IsolatedGrade scores every
# autograded test cell with ppo-course's isolated grader (grader.grade.grade_submission, student
# code in sandboxed children) from the notebooks' text, overwriting whatever a kernel printed there;
# and {execute_note}
import os

from nbconvert.preprocessors import ClearMetadataPreprocessor
from nbgrader.preprocessors import (AssignLatePenalties, CheckCellMetadata, Execute, IgnorePattern,
                                    LimitOutput, SaveAutoGrades)

from grader.platforms.nbgrader_course.autograde import IsolatedGrade

c = get_config()  # noqa: F821 (provided by traitlets when nbgrader loads this file)
c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))
c.CourseDirectory.course_id = "ppo_ch5"
c.ClearSolutions.code_stub = {{"python": "# YOUR CODE HERE\\nraise NotImplementedError()"}}
c.Autograde.autograde_preprocessors = [
    {execute_line}IgnorePattern,
    ClearMetadataPreprocessor,
    LimitOutput,
    IsolatedGrade,    # after LimitOutput (its feedback is never cut) and before SaveAutoGrades
    SaveAutoGrades,
    AssignLatePenalties,
    CheckCellMetadata,
]
c.IsolatedGrade.profile = {profile!r}   # "full"; "fast" skips the slow exercise-7 training run
# The course's grader secret (every hidden input is drawn from it): only the staff may read it.
c.IsolatedGrade.secret_file = os.path.join(c.CourseDirectory.root, "grader_secret")
c.Execute.timeout = {timeout}
# Due dates and late penalties are nbgrader's own settings, e.g.
# c.AssignLatePenalties.penalty_method = "nbgrader.plugins.latesubmission.SubMarks"
'''

EXECUTE_OFF = ("Execute is left out: the student's code never runs in a kernel on the grading\n"
               "# machine (unconfined, it could write to gradebook.db or the course source), only in the\n"
               "# grader's sandbox. `ppo-course nbgrader --execute` puts it back for outputs in the feedback.")
EXECUTE_ON = ("Execute runs each notebook in a kernel so that the feedback shows the cells'\n"
              "# outputs (scores never come from them). That kernel is NOT sandboxed: it runs student code\n"
              "# with this account's rights (it can read grader_secret: rotate it after such a run); drop\n"
              "# Execute (`ppo-course nbgrader` without --execute) to avoid it.")


def exercise_points(profile: str = "full") -> dict[str, float]:
    """{module stem: max points} from the points config, leaving out tests the profile skips.

    Raises:
        ValueError: on an unknown profile.
    """
    from grader.grade import SLOW_TESTS
    from grader.points import load_points

    if profile not in ("full", "fast"):
        raise ValueError(f"profile must be 'full' or 'fast', got {profile!r}")
    out = {}
    for stem, ex in load_points().exercises.items():
        total = 0.0
        for kind in ("public", "hidden"):
            for name, entry in getattr(ex, kind).items():
                if profile == "fast" and (stem, kind, name) in SLOW_TESTS:
                    continue
                total += entry.points
        out[stem] = round(total, 6)
    return out


def build_course(course_dir: str | Path, *, profile: str = "full", execute: bool = False,
                 execute_timeout: int = 120, solutions_dir: str | Path | None = None,
                 secret_file: str | Path | None = None) -> list[Path]:
    """Write the nbgrader course (layout in the module docstring); returns the files written.

    Existing files of the same names are overwritten, except the course's ``grader_secret``, which is
    kept (see :func:`course_secret`); nothing else in ``course_dir`` is touched.

    Args:
        course_dir: the course root (created if absent).
        profile: grading profile written into the config and used for the points ("full"/"fast").
        execute: keep nbgrader's Execute step (student code in an unsandboxed kernel, for outputs
            in the feedback); scores never depend on it either way.
        execute_timeout: seconds per cell for nbgrader's Execute.
        solutions_dir: the solution modules (default: ``solutions/`` of the source tree).
        secret_file: the course secret to copy into a new course (default: the instructor's,
            ``grader.course_secret.secret_path``, made at first use).

    Raises:
        FileNotFoundError: if there are no solution modules.
        ValueError: on an unknown profile.
        quiz_bank.engine.KeysUnavailable: if the quiz keys are not installed.
        grader.course_secret.GraderSecretError: no usable secret for the course and none can be made.
    """
    import nbformat

    from grader.platforms.nbgrader_course.notebooks import exercise_notebook
    from grader.platforms.nbgrader_course.quiz import quiz_notebook
    from grader.points import load_points

    points = exercise_points(profile)
    titles = {stem: ex.title for stem, ex in load_points().exercises.items()}
    solutions = Path(solutions_dir) if solutions_dir else Path(__file__).resolve().parents[3] / "solutions"
    files = sorted(p for p in solutions.glob("ex*.py") if p.stem in points)
    if not files:
        raise FileNotFoundError(f"no solution modules (ex*.py named in grader/points.yaml) in {solutions}")
    course = Path(course_dir).resolve()
    source = course / "source" / ASSIGNMENT
    source.mkdir(parents=True, exist_ok=True)
    written = []
    for path in files:
        nb = exercise_notebook(path, titles[path.stem], points[path.stem])
        target = source / f"{path.stem}.ipynb"
        nbformat.write(nb, str(target))
        written.append(target)
    quiz = source / f"{QUIZ_NOTEBOOK}.ipynb"
    nbformat.write(quiz_notebook(), str(quiz))
    written.append(quiz)
    course_secret(course, secret_file)
    config = course / "nbgrader_config.py"
    config.write_text(CONFIG_TEMPLATE.format(
        profile=profile, timeout=int(execute_timeout), execute_note=EXECUTE_ON if execute else EXECUTE_OFF,
        execute_line="Execute,\n    " if execute else ""), encoding="utf-8")
    written.append(config)
    return written


def course_secret(course: Path, secret_file: str | Path | None = None) -> Path:
    """The nbgrader course's ``grader_secret``: kept when there is one, else a copy of the course secret
    ``secret_file`` (default: the instructor's, made at first use; ``grader.course_secret``), mode 0600.

    Raises:
        grader.course_secret.GraderSecretError: an unusable secret, or none and none can be made.
    """
    from grader.course_secret import SECRET_NAME, create_secret, ensure_secret, load_secret

    target = Path(course) / SECRET_NAME
    if not target.exists():
        source = load_secret(ensure_secret(secret_file))
        try:
            create_secret(target, source.decode("ascii"))
        except FileExistsError:
            pass
    load_secret(target)
    return target
