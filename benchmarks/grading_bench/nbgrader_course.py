"""A minimal nbgrader course in a temporary folder, graded with ``nbgrader autograde`` one student at a time.

Two notebooks, one course each:

* ``kind="same"`` (the comparison that counts): the grader's own tests. For each
  exercise the student's module is a solution cell ``%%writefile <stem>.py``
  followed by the module's source (a module file beside the notebook, so that
  exercise 7 can ``import ex4_gae`` as it does in a submission), and a locked,
  autograded test cell ``run_exercise("<stem>")`` that runs that exercise's
  public and hidden tests (``grader.grade``'s selection, same inputs, same
  hypothesis examples) in the kernel against the module imported there
  (``grading_bench.floor``). A cell is all or nothing (nbgrader's rule), worth
  the exercise's points. Extra helper modules of a submission lie beside the
  notebook, as a student would hand them in.
* ``kind="legacy"``: the earlier fixed-seed ex1-ex6 cells (``grading_bench.nb_legacy``).

nbgrader has no sandbox: the kernel runs the student's code unconfined, so
only trusted cohorts (the demo cohort) may be given to it. It has no memory
limit either: the command runs under RLIMIT_AS = 3 GiB (the cohort's memory hog
would take 4 GiB), and each cell under nbgrader's own time-out (``CELL_TIMEOUT_S``
wall seconds, then the kernel is interrupted and the cell scores 0).
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import sys
from pathlib import Path

from grading_bench.measure import Measured, measure

BENCH_DIR = Path(__file__).resolve().parents[1]
ROOT = BENCH_DIR.parent
MEMORY_LIMIT = 3 * 2**30
# nbgrader's default is 30 s; exercise 7's cell (a 5-step training run included) needs more on a loaded machine.
CELL_TIMEOUT_S = 120
ASSIGNMENT = "ppo"


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def nbgrader_env() -> dict[str, str]:
    """This environment with the interpreter's bin folder first on PATH: nbgrader runs ``alembic`` by name
    to set up its database, and ``make bench`` calls ``.venv/bin/python`` without activating the venv."""
    return dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))


def _cell(kind: str, source: str, grade_id: str | None = None, points: float = 0.0, solution: bool = False,
          grade: bool = False):
    import nbformat

    cell = nbformat.v4.new_code_cell(source) if kind == "code" else nbformat.v4.new_markdown_cell(source)
    if grade_id:
        cell.metadata["nbgrader"] = {"grade_id": grade_id, "schema_version": 3, "solution": solution,
                                     "grade": grade, "locked": not solution, "task": False}
        if grade:
            cell.metadata["nbgrader"]["points"] = points
    return cell


def _writefile(stem: str, source: str) -> str:
    return f"%%writefile {stem}.py\n{source}"


class NbgraderCourse:
    """One nbgrader course (folder `root`) whose assignment ``ppo`` is released and every student submitted.

    Args:
        root: an empty or missing folder.
        kind: "same" (the grader's tests) or "legacy" (the fixed-seed ex1-ex6 cells).
        profile: "full" or "fast" (the same profile as ppo-course's run; "same" only).
    """

    def __init__(self, root: Path, kind: str = "same", profile: str = "full") -> None:
        if kind not in ("same", "legacy"):
            raise ValueError(f"kind must be 'same' or 'legacy', got {kind!r}")
        self.root = Path(root)
        self.kind = kind
        self.profile = profile
        self.stems: list[str] = []

    def _run(self, *args: str) -> Measured:
        return measure([sys.executable, "-m", "nbgrader", *args], cwd=self.root, env=nbgrader_env(),
                       preexec_fn=_limit_memory)

    def _source_notebook(self):
        import nbformat

        if self.kind == "legacy":
            from grading_bench.nb_legacy import NB_SETUP, NB_STEMS, NB_TESTS

            self.stems = list(NB_STEMS)
            cells = [_cell("markdown", "# PPO exercises 1-6 (fixed-seed cells)"), _cell("code", NB_SETUP, "setup")]
            for stem in self.stems:
                solution = (ROOT / "solutions" / f"{stem}.py").read_text(encoding="utf-8")
                cells.append(_cell("code", solution, stem, solution=True))
                cells.append(_cell("code", NB_TESTS[stem], f"test_{stem}", points=10, grade=True))
        else:
            from ppo_course.syllabus import EXERCISES
            from grading_bench.floor import scores

            self.stems = list(EXERCISES)
            max_points = scores({}, self.stems, self.profile)
            setup = (f"import sys\nsys.path.insert(0, {str(BENCH_DIR)!r})\n"
                     "from grading_bench.floor import run_exercise")
            cells = [_cell("markdown", "# PPO exercises 1-7: the grader's public and hidden tests"),
                     _cell("code", setup, "setup")]
            for stem in self.stems:
                solution = (ROOT / "solutions" / f"{stem}.py").read_text(encoding="utf-8")
                cells.append(_cell("code", _writefile(stem, solution), stem, solution=True))
                cells.append(_cell("code", f"run_exercise({stem!r}, {self.profile!r})", f"test_{stem}",
                                   points=max_points[stem]["max_score"], grade=True))
        nb = nbformat.v4.new_notebook(cells=cells)
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        return nb

    def build(self, submissions: dict[str, Path]) -> None:
        """Write the course, release the assignment, and submit each student's notebook.

        Args:
            submissions: ``{student id: module root}`` (a plain folder, see ``grading_bench.cohort.stage``).

        Raises:
            RuntimeError: when ``nbgrader generate_assignment`` fails (with its output).
        """
        import nbformat

        from grading_bench.cohort import module_sources

        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / "nbgrader_config.py").write_text(
            "c = get_config()\n"
            f"c.CourseDirectory.root = {str(self.root)!r}\n"
            "c.CourseDirectory.course_id = 'ppo'\n"
            f"c.Execute.timeout = {CELL_TIMEOUT_S}\n")
        (self.root / "source" / ASSIGNMENT).mkdir(parents=True)
        nbformat.write(self._source_notebook(), self.root / "source" / ASSIGNMENT / "ppo.ipynb")
        got = self._run("generate_assignment", ASSIGNMENT, "--create", "--force")
        if got.returncode != 0:
            raise RuntimeError(f"nbgrader generate_assignment failed:\n{got.stdout[-2000:]}\n{got.stderr[-2000:]}")
        release = nbformat.read(self.root / "release" / ASSIGNMENT / "ppo.ipynb", as_version=4)
        for sid, module_root in submissions.items():
            sources = module_sources(module_root)
            student_nb = nbformat.from_dict(json.loads(json.dumps(release)))
            for cell in student_nb.cells:
                gid = cell.metadata.get("nbgrader", {}).get("grade_id")
                if gid in self.stems and f"{gid}.py" in sources:
                    text = sources[f"{gid}.py"]
                    cell.source = text if self.kind == "legacy" else _writefile(gid, text)
            folder = self.root / "submitted" / sid / ASSIGNMENT
            folder.mkdir(parents=True)
            nbformat.write(student_nb, folder / "ppo.ipynb")
            if self.kind == "same":
                # Helper modules (not exercise modules) are handed in beside the notebook.
                for name in sources:
                    if Path(name).stem not in self.stems:
                        shutil.copy2(module_root / name, folder / name)

    def autograde(self, sid: str) -> Measured:
        """``nbgrader autograde ppo --student SID``, measured (CPU-seconds with its kernel, wall)."""
        return self._run("autograde", ASSIGNMENT, "--student", sid, "--create", "--force")

    def scores(self) -> dict[str, float | None]:
        """``{student id: score}`` from nbgrader's gradebook (None for a student it did not grade)."""
        from nbgrader.api import Gradebook, MissingEntry

        out: dict[str, float | None] = {}
        with Gradebook(f"sqlite:///{self.root / 'gradebook.db'}") as gb:
            for student in gb.students:
                try:
                    out[student.id] = gb.find_submission(ASSIGNMENT, student.id).score
                except MissingEntry:
                    out[student.id] = None
        return out
