"""One intake for every path (issue 10 "Also") and the natural zip (issue 13 item 2).

The same submission gets the same verdict from ``ppo-course grade``,
``grade-batch`` and the Gradescope runner (nbgrader's autograde writes its
modules into a folder and calls the same ``grade_submission``). The cases are
the ones where the paths used to disagree: a symlink pointing out of the
submission (``grade`` skipped it, the batch rejected it), a zip bomb (only the
batch checked the ratio), a 21 MB folder (``grade`` allowed 50 MiB), and the
layouts of issue 13: the student bundle's folder zipped whole, and two folders
of exercise modules.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from ppo_course import submission_layout as intake
from ppo_course.submission_rules import Rejected

REPO = Path(__file__).resolve().parents[2]
CORRECT_EX1 = (REPO / "solutions" / "ex1_ratio.py").read_text(encoding="utf-8")

pytestmark = pytest.mark.xdist_group("grader")


def natural_zip(path: Path) -> Path:
    """What a student makes by zipping the bundle's folder: the modules two levels down, beside a quiz file."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("ppo-ch5-student/README.md", "# PPO chapter 5\n")
        zf.writestr("ppo-ch5-student/quiz_responses.json", json.dumps({"q1": "b"}))
        zf.writestr("ppo-ch5-student/exercises/ex1_ratio.py", CORRECT_EX1)
        zf.writestr("ppo-ch5-student/exercises/__init__.py", "")
        zf.writestr("__MACOSX/ppo-ch5-student/exercises/._ex1_ratio.py", b"\x00\x05junk")
    return path


def ambiguous_zip(path: Path) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("final/ex1_ratio.py", CORRECT_EX1)
        zf.writestr("old_attempt/ex1_ratio.py", "def probability_ratio(a, b):\n    return a\n")
    return path


def bomb_zip(path: Path) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("ex1_ratio.py", CORRECT_EX1)
        zf.writestr("data.bin", b"\0" * 3_000_000)  # ~1000-fold: over the 100-fold ratio
    return path


def link_out(path: Path) -> Path:
    path.mkdir()
    (path / "ex1_ratio.py").write_text(CORRECT_EX1, encoding="utf-8")
    (path / "notes.txt").symlink_to("/etc/hostname")
    return path


def too_big(path: Path) -> Path:
    path.mkdir()
    (path / "ex1_ratio.py").write_text(CORRECT_EX1, encoding="utf-8")
    (path / "checkpoint.pt").write_bytes(b"\1" * 21_000_000)  # over 20 MB, under the old 50 MiB of `grade`
    return path


#: case -> (builder, file name, expected status, words the student reads)
CASES = {
    "natural": (natural_zip, "natural.zip", "graded", "Found your exercise modules in 'ppo-ch5-student/exercises/'"),
    "ambiguous": (ambiguous_zip, "ambiguous.zip", "rejected", "exercise modules were found in 2 different folders"),
    "bomb": (bomb_zip, "bomb.zip", "rejected", "zip bomb"),
    "link_out": (link_out, "link_out", "rejected", "points outside the submission"),
    "too_big": (too_big, "too_big", "rejected", "larger than the limit of 20.0 MB"),
}


@pytest.fixture(scope="module")
def cohort(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("cohort") / "submissions"
    root.mkdir()
    for build, name, _, _ in CASES.values():
        build(root / name)
    return root


def test_locate_modules_finds_the_one_folder_at_any_depth(tmp_path):
    (tmp_path / "a" / "b" / "c").mkdir(parents=True)
    (tmp_path / "a" / "b" / "c" / "ex4_gae.py").write_text("X = 1\n")
    (tmp_path / "a" / "helper.py").write_text("Y = 2\n")  # not an exercise module: does not count
    (tmp_path / ".ipynb_checkpoints").mkdir()
    (tmp_path / ".ipynb_checkpoints" / "ex4_gae.py").write_text("X = 0\n")  # junk: does not count
    found = intake.locate_modules(tmp_path)
    assert found.root == tmp_path / "a" / "b" / "c" and found.where == "a/b/c"
    (tmp_path / "ex1_ratio.py").write_text("Z = 3\n")
    with pytest.raises(Rejected, match=r"2 different folders \('\./', 'a/b/c/'\)"):
        intake.locate_modules(tmp_path)


def test_a_folder_without_exercise_modules_is_its_own_root(tmp_path):
    (tmp_path / "notes.md").write_text("nothing here\n")
    assert intake.locate_modules(tmp_path) == intake.ModuleLocation(tmp_path, ".")


@pytest.mark.slow
def test_the_natural_zip_as_a_student_meets_it(tmp_path):
    """The real student bundle, ex1 written, quiz answers beside it, the whole folder zipped:
    `ppo-course grade` grades it from the nested folder and says where."""
    from grader.platforms.release import build_release

    bundle = tmp_path / "ppo-ch5-student"
    build_release(bundle)
    (bundle / "exercises" / "ex1_ratio.py").write_text(CORRECT_EX1, encoding="utf-8")
    (bundle / "quiz_responses_s123.json").write_text(json.dumps({"q1": "b"}), encoding="utf-8")
    archive = tmp_path / "natural.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(bundle.rglob("*")):
            zf.write(path, path.relative_to(tmp_path).as_posix())
    out, feedback = tmp_path / "results.json", tmp_path / "feedback.md"
    proc = subprocess.run([sys.executable, "-m", "ppo_course.cli", "grade", str(archive), "--out",
                           str(out), "--feedback", str(feedback), "--exercises", "ex1_ratio", "--profile", "fast"],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Found your exercise modules in 'ppo-ch5-student/exercises/'" in proc.stdout
    results = json.loads(out.read_text(encoding="utf-8"))
    assert results["extra_data"]["status"] == "graded"
    ex1 = results["extra_data"]["exercises"]["ex1_ratio"]
    assert ex1["score"] == ex1["max_score"] > 0  # the solution, found two folders down
    assert "ppo-ch5-student/exercises/" in results["output"]


@pytest.mark.slow
def test_an_ambiguous_layout_is_rejected_with_the_reason(cohort, tmp_path):
    from grader.grade import grade_submission

    result = grade_submission(cohort / "ambiguous.zip", exercises=["ex1_ratio"], profile="fast")
    assert (result.status, result.score) == ("rejected", 0)
    assert "'final/', 'old_attempt/'" in result.message and "not clear which ones to grade" in result.message


@pytest.mark.slow
def test_every_path_gives_the_same_verdict(cohort, tmp_path):
    """grade, grade-batch and the Gradescope runner: the same status and reason for each case."""
    from grader.batch import run_batch
    from grader.grade import grade_submission
    from grader.platforms.gradescope.run import BundleConfig, grade_for_gradescope

    verdicts: dict[str, dict[str, tuple[str, bool]]] = {}
    for case, (_, name, want, words) in CASES.items():
        got = grade_submission(cohort / name, exercises=["ex1_ratio"], profile="fast")
        verdicts.setdefault(case, {})["grade"] = (got.status, words in got.message)

    run_batch(cohort, tmp_path / "batch", jobs=2, profile="fast", exercises=["ex1_ratio"], progress=False,
              report=False, log=lambda m: None)
    for case, (_, name, want, words) in CASES.items():
        student = name[: -len(".zip")] if name.endswith(".zip") else name
        record = json.loads((tmp_path / "batch" / student / "batch.json").read_text(encoding="utf-8"))
        results = json.loads((tmp_path / "batch" / student / "results.json").read_text(encoding="utf-8"))
        verdicts[case]["grade-batch"] = (record["status"], words in record["message"] + results.get("output", ""))

    for case in ("natural", "ambiguous", "bomb"):  # Gradescope receives one uploaded zip (or its files)
        _, name, want, words = CASES[case]
        sub = tmp_path / "gradescope" / case
        sub.mkdir(parents=True)
        (sub / name).write_bytes((cohort / name).read_bytes())
        results = grade_for_gradescope(sub, BundleConfig(profile="fast"))
        verdicts[case]["gradescope"] = (results["extra_data"]["batch_status"], words in results.get("output", ""))

    want = {case: (status, True) for case, (_, _, status, _) in CASES.items()}
    for case, by_path in verdicts.items():
        assert set(by_path.values()) == {want[case]}, f"{case}: {by_path}"
