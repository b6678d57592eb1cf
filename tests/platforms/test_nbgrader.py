"""Real nbgrader, end to end: generate_assignment, autograde (3 students), generate_feedback, export.

One module-scoped run (the slowest test of the suite, in the fast grading profile):
alice submits the solutions (plus stderr output and a warning at import), bob the
untouched release, mallory stubs that patch every comparison function and edit the
locked test cells. Scores must come from `grade_submission`, never from a kernel.
"""

from __future__ import annotations

import csv
import html
import subprocess
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
import yaml

from conftest import REPO, clean_env
from leak_scan import solution_line_pairs
from nb_students import module_files_of, write_students

# One course run shared by every test here: keep them on one xdist worker (`make test` uses --dist loadgroup).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("nbgrader_course")]
ASSIGNMENT = "ppo_ch5"
PROFILE = "fast"
STUDENTS = ("alice", "bob", "mallory")



def _nbgrader_env() -> dict[str, str]:
    """nbgrader runs `alembic` as a command to set up its database: the venv's bin must be on PATH
    (it is when the venv is activated, not when make calls .venv/bin/python directly)."""
    return clean_env(PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))

def _nbgrader(course: Path, *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course, capture_output=True, text=True,
                          env=_nbgrader_env(), timeout=1200)
    assert proc.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    return proc


@dataclass
class CourseRun:
    course: Path
    notebook_scores: dict[str, dict[str, tuple[float, float]]]  # student -> notebook -> (score, max)
    csv_rows: dict[str, dict[str, str]]  # student -> row of nbgrader's grades.csv


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> CourseRun:
    from nbgrader.api import Gradebook

    from grader.platforms.nbgrader_course import build_course

    course = tmp_path_factory.mktemp("nbgrader") / "course"
    build_course(course, profile=PROFILE)
    _nbgrader(course, "generate_assignment", ASSIGNMENT, "--force")
    write_students(course)
    _nbgrader(course, "autograde", ASSIGNMENT, "--force")
    _nbgrader(course, "generate_feedback", ASSIGNMENT, "--force")
    _nbgrader(course, "export", "--to", str(course / "grades.csv"))
    scores: dict[str, dict[str, tuple[float, float]]] = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for student in STUDENTS:
            sub = gb.find_submission(ASSIGNMENT, student)
            scores[student] = {nb.name: (nb.score, nb.max_score) for nb in sub.notebooks}
    with open(course / "grades.csv", newline="", encoding="utf-8") as fh:
        rows = {row["student_id"]: row for row in csv.DictReader(fh)}
    return CourseRun(course, scores, rows)


def _expected_max_points() -> dict[str, float]:
    """Exercise max points read straight from grader/points.yaml, minus the tests the fast profile skips."""
    from grader.grade import SLOW_TESTS

    data = yaml.safe_load((REPO / "grader" / "points.yaml").read_text(encoding="utf-8"))
    out = {}
    for stem, ex in data["exercises"].items():
        total = 0.0
        for kind in ("public", "hidden"):
            for name, entry in (ex.get(kind) or {}).items():
                if (stem, kind, name) not in SLOW_TESTS:
                    total += entry if isinstance(entry, (int, float)) else entry["points"]
        out[stem] = total
    return out


def test_source_cells_carry_schema_3_metadata_and_the_points_config(run: CourseRun):
    """Every cell has nbgrader schema-3 metadata; each exercise's test cell is worth its points.yaml total."""
    expected = _expected_max_points()
    for path in sorted((run.course / "source" / ASSIGNMENT).glob("*.ipynb")):
        nb = nbformat.read(str(path), as_version=4)
        graded = []
        for cell in nb.cells:
            meta = cell.metadata["nbgrader"]
            assert meta["schema_version"] == 3 and {"grade", "solution", "locked", "grade_id"} <= set(meta), path.name
            if meta["grade"]:
                graded.append(meta["points"])
        if path.stem == "quiz":
            assert graded and all(p == 1.0 for p in graded)
        else:
            assert sum(graded) == pytest.approx(expected[path.stem]), path.name
            assert any(c.metadata["nbgrader"]["solution"] for c in nb.cells), f"{path.name} has no answer cell"


def test_release_holds_no_solution_key_or_hidden_test(run: CourseRun):
    """generate_assignment's release: no solution code, no marker, no quiz key, nothing from grader/hidden."""
    from grader.platforms.nbgrader_course.quiz import NoAnswer, read_answer

    pairs = solution_line_pairs(REPO / "solutions")
    hidden_lines = {ln.strip() for p in (REPO / "grader" / "hidden").glob("*.py")
                    for ln in p.read_text(encoding="utf-8").splitlines() if len(ln.strip()) >= 40}
    for path in sorted((run.course / "release" / ASSIGNMENT).glob("*.ipynb")):
        nb = nbformat.read(str(path), as_version=4)
        text = "\n".join(c.source for c in nb.cells)
        assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text, path.name
        lines = [s.strip() for s in text.splitlines() if s.strip() and not s.strip().startswith("#")]
        assert not set(zip(lines, lines[1:])) & pairs, f"{path.name} holds solution code"
        assert not {s.strip() for s in text.splitlines()} & hidden_lines, f"{path.name} holds hidden-test code"
        for cell in nb.cells:
            if "quiz_answer" in cell.metadata.get("ppo_course", {}):
                with pytest.raises(NoAnswer):
                    read_answer(cell.source)


def test_full_marks_for_the_solutions_and_zero_for_the_release(run: CourseRun):
    """nbgrader's CSV export: alice (solutions, with stderr and a warning) full marks, bob 0."""
    alice, bob = run.csv_rows["alice"], run.csv_rows["bob"]
    assert float(alice["max_score"]) > 0
    assert float(alice["raw_score"]) == pytest.approx(float(alice["max_score"]))
    assert float(bob["raw_score"]) == 0.0
    assert float(bob["max_score"]) == pytest.approx(float(alice["max_score"]))


def test_points_equal_ppo_course_grade_of_the_same_code(run: CourseRun, tmp_path: Path):
    """Each exercise notebook's score equals grade_submission's score for that module, same profile.

    (bob's untouched release is checked against 0 in the test above; alice's code is the one that earns points.)"""
    from grader.grade import grade_submission

    for student in ("alice",):
        folder = module_files_of(run.course / "submitted" / student / ASSIGNMENT, tmp_path / student)
        result = grade_submission(folder, profile=PROFILE)
        for stem, ex in result.exercises.items():
            score, max_score = run.notebook_scores[student][stem]
            assert (score, max_score) == (pytest.approx(ex.score), pytest.approx(ex.max_score)), (student, stem)


def test_patching_comparisons_and_test_cells_gains_nothing(run: CourseRun):
    """mallory's patched stubs score exactly what bob's untouched stubs score: 0 on every notebook."""
    assert run.notebook_scores["mallory"] == run.notebook_scores["bob"]
    assert all(score == 0.0 for score, _ in run.notebook_scores["mallory"].values())
    nb = nbformat.read(str(run.course / "autograded" / "mallory" / ASSIGNMENT / "ex1_ratio.ipynb"), as_version=4)
    graded = [c for c in nb.cells if c.metadata["nbgrader"].get("grade")]
    assert graded and all(c.source != "10.0" for c in graded)  # the locked cell was restored from the source
    assert all(o["data"]["text/plain"] == "0.0" for c in graded for o in c.outputs if o["output_type"] == "execute_result")


def test_feedback_shows_scores_but_no_hidden_test_or_key(run: CourseRun):
    """generate_feedback's HTML: the isolated grader's feedback is there; hidden-test code and quiz explanations are not."""
    explanations = [q["explanation"].strip() for p in sorted((REPO / "quiz_bank").glob("stop*.yaml"))
                    for q in yaml.safe_load(p.read_text(encoding="utf-8"))["questions"] if q.get("explanation")]
    hidden_defs = {ln.strip() for p in (REPO / "grader" / "hidden").glob("test_*.py")
                   for ln in p.read_text(encoding="utf-8").splitlines() if ln.strip().startswith(("def ", "assert "))}
    for student in ("alice", "bob"):
        folder = run.course / "feedback" / student / ASSIGNMENT
        pages = {p.stem: html.unescape(p.read_text(encoding="utf-8")) for p in folder.glob("*.html")}
        assert set(pages) >= {"ex1_ratio", "quiz"}, sorted(pages)
        assert "graded outside your kernel" in pages["ex1_ratio"]
        for name, page in pages.items():
            assert not [d for d in hidden_defs if d in page], (student, name)
            assert not [e for e in explanations if e[:60] in page], (student, name)


def test_with_execute_the_kernel_runs_but_still_decides_nothing(run: CourseRun):
    """`--execute` puts nbgrader's Execute back: mallory's patches now run in a real kernel (her cells have
    outputs), and her exercise-1 score is still what the isolated grader says: 0."""
    from nbgrader.api import Gradebook

    from grader.platforms.nbgrader_course import build_course

    build_course(run.course, profile=PROFILE, execute=True)
    assert "    Execute," in (run.course / "nbgrader_config.py").read_text(encoding="utf-8")
    _nbgrader(run.course, "autograde", ASSIGNMENT, "--force", "--student", "mallory", "--notebook", "ex1_ratio")
    nb = nbformat.read(str(run.course / "autograded" / "mallory" / ASSIGNMENT / "ex1_ratio.ipynb"), as_version=4)
    executed = [c for c in nb.cells if c.cell_type == "code" and c.get("execution_count")]
    assert executed, "Execute did not run the notebook"
    with Gradebook(f"sqlite:///{run.course / 'gradebook.db'}") as gb:
        score = gb.find_submission_notebook("ex1_ratio", ASSIGNMENT, "mallory").score
    assert score == 0.0


def test_the_course_keeps_its_secret_out_of_what_students_get(run: CourseRun):
    """The course's grader secret is in the course root (0600) and in nothing nbgrader releases or feeds back."""
    import stat

    from grader.course_secret import load_secret

    secret_file = run.course / "grader_secret"
    value = load_secret(secret_file)
    assert stat.S_IMODE(secret_file.stat().st_mode) == 0o600
    assert "c.IsolatedGrade.secret_file" in (run.course / "nbgrader_config.py").read_text(encoding="utf-8")
    for folder in ("source", "release", "feedback"):
        files = [p for p in (run.course / folder).rglob("*") if p.is_file()]
        assert files, folder
        assert [p for p in files if "secret" in p.name or value in p.read_bytes()] == [], folder
