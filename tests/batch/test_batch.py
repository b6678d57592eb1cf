"""Batch grading mechanics (grader/batch.py): discovery, isolation, resume, formats, the class report.

All of these use the stand-in grader (stand_in_grader.py, see its docstring
for why); expected scores follow from its rules by hand: 2 points per module
found, minus 1 per BUG_VALUE / BUG_GRAD marker.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import zipfile
from pathlib import Path

import pytest

from conftest import write_student
from grader import batch
from grader import student
from grader.batch import run_batch
from grader.intake.class_list import discover
from grader.records.out_folder import BatchBusy, lock_out_dir
from ppo_course.submission_rules import SubmissionLimits
from ppo_course.submission_rules import Rejected, stage_submission
from grader.points import load_points
from grader.records.gradebook import CONTRACT_STEMS, NBGRADER_COLUMNS, STATE_DIR

pytestmark = pytest.mark.usefixtures("stand_in")


def grade(subs: Path, out: Path, **kw) -> batch.BatchSummary:
    kw.setdefault("jobs", 2)
    return run_batch(subs, out, progress=False, log=lambda m: None, **kw)


def rows(out: Path) -> dict[str, dict[str, str]]:
    with open(out / "gradebook.csv", newline="") as fh:
        return {r["student_id"]: r for r in csv.DictReader(fh)}


@pytest.fixture
def cohort(tmp_path) -> Path:
    """Three students: alice perfect on two modules (4), bob with one bug (1), carol empty."""
    subs = tmp_path / "subs"
    write_student(subs, "alice", {"ex1_ratio.py": "ok", "ex4_gae.py": "ok"})
    write_student(subs, "bob", {"ex2_clipped_loss.py": "BUG_VALUE"})
    (subs / "carol").mkdir()
    return subs


def test_gradebook_has_contract_columns_and_scores(cohort, tmp_path):
    summary = grade(cohort, tmp_path / "out")
    book = rows(tmp_path / "out")
    header = (tmp_path / "out" / "gradebook.csv").read_text().splitlines()[0].split(",")
    assert header[0] == "student_id" and header[-4:] == ["total", "max_total", "status", "message"]
    assert header[1:-4] == list(CONTRACT_STEMS)
    assert (book["alice"]["total"], book["alice"]["status"]) == ("4", "graded")
    assert (book["alice"]["ex1_ratio"], book["alice"]["ex4_gae"], book["alice"]["ex2_clipped_loss"]) == ("2", "2", "0")
    assert (book["bob"]["total"], book["bob"]["ex2_clipped_loss"]) == ("1", "1")
    assert book["carol"]["status"] == "empty" and book["carol"]["total"] == "0"
    assert {r["max_total"] for r in book.values()} == {"14"}  # 7 modules x 2 points
    for sid in ("alice", "bob", "carol"):
        assert (tmp_path / "out" / sid / "results.json").is_file()
        assert (tmp_path / "out" / sid / "feedback.md").is_file()
    assert summary.count("graded") == 2


def test_duplicate_ids_are_both_rejected_and_the_batch_carries_on(cohort, tmp_path):
    write_student(cohort, "dave", {"ex1_ratio.py": "ok"})
    with zipfile.ZipFile(cohort / "dave.zip", "w") as zf:
        zf.writestr("ex1_ratio.py", "ok")
    book = rows(grade(cohort, tmp_path / "out").out_dir)
    assert book["dave"]["status"] == "rejected"
    assert "'dave'" in book["dave"]["message"] and "dave.zip" in book["dave"]["message"]
    assert book["alice"]["status"] == "graded"
    assert "rejected" in (tmp_path / "out" / "dave" / "feedback.md").read_text().lower()


def test_stray_files_are_skipped_with_a_warning(cohort, tmp_path):
    (cohort / "notes.txt").write_text("not a student")
    (cohort / ".DS_Store").write_bytes(b"\0")
    warnings = []
    run_batch(cohort, tmp_path / "out", jobs=2, progress=False, log=warnings.append)
    assert set(rows(tmp_path / "out")) == {"alice", "bob", "carol"}
    assert any("notes.txt" in w for w in warnings)
    assert not any(".DS_Store" in w for w in warnings)


def _zip_with_raw_name(path: Path, raw_name: bytes, data: bytes) -> None:
    """A zip whose entry name is the raw bytes given (no UTF-8 flag): zipfile cannot write one directly."""
    placeholder = b"Q" * len(raw_name)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(placeholder.decode(), data)
    path.write_bytes(buf.getvalue().replace(placeholder, raw_name))


@pytest.fixture
def bad_cohort(tmp_path) -> Path:
    subs = tmp_path / "subs"
    write_student(subs, "ok", {"ex1_ratio.py": "ok"})
    (subs / "garbage.zip").write_bytes(b"this is not a zip file at all")
    write_student(subs, "huge", {"ex1_ratio.py": "ok", "data.bin": b"\1" * 5000})
    with zipfile.ZipFile(subs / "hugezip.zip", "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("ex1_ratio.py", "ok")
        zf.writestr("weights.bin", b"\1" * 5000)
    with zipfile.ZipFile(subs / "bomb.zip", "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("ex1_ratio.py", b"\0" * 3_000_000)  # ~3 kB compressed: a 1000-fold expansion
    with zipfile.ZipFile(subs / "traversal.zip", "w") as zf:
        zf.writestr("ex1_ratio.py", "ok")
        zf.writestr("../../escaped.py", "print('owned')")
    folder = write_student(subs, "linker", {"ex1_ratio.py": "ok"})
    os.symlink("/etc/passwd", folder / "ex2_clipped_loss.py")
    folder = write_student(subs, "latin1", {"ex1_ratio.py": "ok"})
    with open(os.path.join(os.fsencode(folder), b"caf\xe9.py"), "wb") as fh:
        fh.write(b"x = 1\n")
    _zip_with_raw_name(subs / "latin1zip.zip", b"\xff\xfe.py", b"x = 1\n")
    write_student(subs, "nul", {"ex1_ratio.py": "ok", "ex4_gae.py": b"def f():\n    return 1\x00\n"})
    return subs


def test_bad_inputs_get_a_clear_status_and_message(bad_cohort, tmp_path):
    # max_bytes below the big files (5000 B) but above the bomb's declared size test? no: the bomb is
    # 3 MB declared, far above; the ratio check must catch it even with a generous limit.
    limits = SubmissionLimits(max_bytes=4000)
    book = rows(grade(bad_cohort, tmp_path / "out", limits=limits).out_dir)
    assert book["ok"]["status"] == "graded" and book["ok"]["total"] == "2"
    assert book["garbage"]["status"] == "rejected" and "not a readable zip" in book["garbage"]["message"]
    assert book["huge"]["status"] == "rejected" and "larger than the limit" in book["huge"]["message"]
    assert book["hugezip"]["status"] == "rejected" and "more than the limit" in book["hugezip"]["message"]
    assert book["traversal"]["status"] == "rejected" and "escapes the submission" in book["traversal"]["message"]
    assert not (tmp_path / "escaped.py").exists() and not (tmp_path.parent / "escaped.py").exists()
    assert book["linker"]["status"] == "rejected" and "points outside the submission" in book["linker"]["message"]
    # Non-UTF-8 names: the file is dropped with a note, the rest is graded.
    for sid in ("latin1", "latin1zip"):
        assert book[sid]["status"] in ("graded", "empty"), book[sid]
        assert "not valid UTF-8" in book[sid]["message"]
    assert book["latin1"]["total"] == "2"
    # NUL byte: graded, that exercise scores 0, and the message says why.
    assert book["nul"]["status"] == "graded" and book["nul"]["ex4_gae"] == "0" and book["nul"]["ex1_ratio"] == "2"
    assert "NUL byte" in book["nul"]["message"]
    assert "NUL byte" in (tmp_path / "out" / "nul" / "feedback.md").read_text()


def test_zip_bomb_is_rejected_even_under_a_generous_size_limit(bad_cohort, tmp_path):
    book = rows(grade(bad_cohort, tmp_path / "out", limits=SubmissionLimits(max_bytes=10**9)).out_dir)
    assert book["bomb"]["status"] == "rejected" and "zip bomb" in book["bomb"]["message"]
    assert book["huge"]["status"] == "graded"  # 5 kB is fine under 1 GB


def test_size_is_checked_from_headers_before_extracting(tmp_path, monkeypatch):
    """A zip over the limit is rejected without a single byte being extracted."""
    subs = tmp_path / "subs"
    subs.mkdir()
    with zipfile.ZipFile(subs / "big.zip", "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("ex1_ratio.py", b"#" * 3000)
    opened = []
    monkeypatch.setattr(zipfile.ZipFile, "open", lambda self, *a, **k: opened.append(a) or 1 / 0)
    entries, _ = discover(subs)
    with pytest.raises(Rejected, match="more than the limit"):
        stage_submission(entries[0], tmp_path / "staging", SubmissionLimits(max_bytes=1000))
    assert opened == []


def test_resume_skips_graded_students_and_regrades_a_changed_submission(cohort, tmp_path):
    out = tmp_path / "out"
    first = grade(cohort, out)
    assert sorted(first.graded_now) == ["alice", "bob", "carol"]
    before = (out / "gradebook.csv").read_text()
    again = grade(cohort, out)
    assert again.graded_now == [] and sorted(again.skipped) == ["alice", "bob", "carol"]
    assert (out / "gradebook.csv").read_text() == before
    (cohort / "bob" / "ex2_clipped_loss.py").write_text("fixed")
    third = grade(cohort, out)
    assert third.graded_now == ["bob"]
    assert rows(out)["bob"]["total"] == "2"
    assert grade(cohort, out, force=True).graded_now.__len__() == 3


def test_a_new_grader_version_regrades_everyone(cohort, tmp_path, monkeypatch):
    out = tmp_path / "out"
    grade(cohort, out)
    monkeypatch.setattr(batch, "grader_fingerprint", lambda: "another-grader")
    assert sorted(grade(cohort, out).graded_now) == ["alice", "bob", "carol"]


def test_hang_and_crash_are_isolated(cohort, tmp_path):
    write_student(cohort, "hanger", {"ex1_ratio.py": "STANDIN_HANG"})
    write_student(cohort, "crasher", {"ex1_ratio.py": "STANDIN_CRASH"})
    book = rows(grade(cohort, tmp_path / "out", limits=SubmissionLimits(timeout_s=6)).out_dir)
    assert book["hanger"]["status"] == "timed-out" and "longer than the limit of 6 s" in book["hanger"]["message"]
    assert book["crasher"]["status"] == "grader_fault" and "exit status 3" in book["crasher"]["message"]
    assert (book["alice"]["status"], book["alice"]["total"]) == ("graded", "4")
    # Zero results carry the real grader's max scores (grader/points.yaml), whatever the stand-in says.
    assert book["hanger"]["max_total"] == f"{load_points().max_score:g}"
    assert _processes_mentioning(str(tmp_path / "out")) == []


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if text.encode() in cmdline:
            found.append(int(pid))
    return found


def test_nbgrader_export_columns(cohort, tmp_path):
    grade(cohort, tmp_path / "out", formats=("nbgrader",), assignment="ppo_ch5")
    with open(tmp_path / "out" / "grades.csv", newline="") as fh:
        reader = csv.DictReader(fh)
        assert tuple(reader.fieldnames) == NBGRADER_COLUMNS
        by_id = {r["student_id"]: r for r in reader}
    assert by_id["alice"]["assignment"] == "ppo_ch5"
    assert (by_id["alice"]["raw_score"], by_id["alice"]["score"], by_id["alice"]["max_score"]) == ("4", "4", "14")
    assert by_id["bob"]["late_submission_penalty"] == "0.0"


def test_class_report_counts_diagnoses_once_per_student(tmp_path):
    subs = tmp_path / "subs"
    write_student(subs, "a", {"ex2_clipped_loss.py": "BUG_VALUE", "ex3_full_loss.py": "BUG_VALUE"})
    write_student(subs, "b", {"ex2_clipped_loss.py": "BUG_VALUE BUG_GRAD"})
    write_student(subs, "c", {"ex2_clipped_loss.py": "ok"})
    out = grade(subs, tmp_path / "out").out_dir
    report = (out / "report.md").read_text()
    # a: max_instead_of_min (twice, counted once); b: both; c: none -> 2 and 1 students.
    assert "| 1 | `max_instead_of_min` | `ex2_clipped_loss`, `ex3_full_loss` | 2 |" in report
    assert "| 2 | `ratio_detached` | `ex2_clipped_loss` | 1 |" in report
    # ex2 scores 0+2 (a: BUG_VALUE -> 1), b -> 0, c -> 2: mean (1+0+2)/3 = 1.00, median 1.
    assert "| `ex2_clipped_loss` | 2 | 1.00 | 1 | 1/3 |" in report
    assert (out / "report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_grade_batch_command_line_rejects_a_missing_folder(tmp_path, capsys):
    from ppo_course.cli import main

    assert main(["grade-batch", str(tmp_path / "nope"), "--out", str(tmp_path / "out")]) == 2
    assert "is not a folder of submissions" in capsys.readouterr().err
    assert main(["grade-batch", str(tmp_path), "--out", str(tmp_path / "out"), "--jobs", "0"]) == 2


def test_grade_batch_refuses_an_empty_folder_and_one_students_own_folder(tmp_path, capsys):
    """Neither is a class: an empty folder would publish an empty gradebook, a submission's own folder would skip
    its modules as stray files; both are usage errors (exit 2) that say what to give instead."""
    from ppo_course.cli import main

    (tmp_path / "class").mkdir()
    assert main(["grade-batch", str(tmp_path / "class"), "--out", str(tmp_path / "out")]) == 2
    assert "holds no submission" in capsys.readouterr().err
    (tmp_path / "class" / "ex1_ratio.py").write_text("x = 1\n")
    (tmp_path / "class" / "helpers").mkdir()  # a sub-folder beside it does not make it a class
    assert main(["grade-batch", str(tmp_path / "class"), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "ex1_ratio.py" in err and "ppo-course grade" in err and not (tmp_path / "out").exists()


def test_another_archive_is_its_student_rejected_with_what_to_do(tmp_path):
    """``zoe.tar.gz`` is zoe's submission in a format the grader does not read: a gradebook row (rejected), never
    a student dropped with a warning. ``notes.txt`` stays a stray file."""
    (tmp_path / "amy").mkdir()
    (tmp_path / "zoe.tar.gz").write_bytes(b"\x1f\x8b")
    (tmp_path / "yan.7z").write_bytes(b"7z")
    (tmp_path / "notes.txt").write_text("not a student")
    entries, warnings = discover(tmp_path)
    by_id = {e.student_id: e for e in entries}
    assert sorted(by_id) == ["amy", "yan", "zoe"] and by_id["amy"].problem is None
    assert ".tar.gz archive" in by_id["zoe"].problem and "unpack" in by_id["zoe"].problem
    assert ".7z archive" in by_id["yan"].problem
    assert any("notes.txt" in w for w in warnings) and not any("zoe" in w for w in warnings)
    with pytest.raises(Rejected, match="tar.gz"):
        stage_submission(by_id["zoe"], tmp_path / "staged", SubmissionLimits())


def test_parse_expected_reads_the_total_of_the_profile(tmp_path):
    from grader.commands.demo import parse_expected

    md = tmp_path / "EXPECTED.md"
    md.write_text("Intro.\n\n| student_id | what | total_full | total_fast | status |\n| --- | --- | ---: | ---: | --- |\n"
                  "| `ada` | perfect | 100 | 90 | graded |\n| lea | empty | 0 | 0 | empty |\n")
    assert parse_expected(md, "full") == {"ada": ("100", "graded"), "lea": ("0", "empty")}
    assert parse_expected(md, "fast")["ada"] == ("90", "graded")
    md.write_text("| student_id | total | status |\n| --- | --- | --- |\n")
    with pytest.raises(ValueError, match="total_full"):
        parse_expected(md, "full")


def test_unreadable_file_rejects_only_that_student(cohort, tmp_path, monkeypatch):
    # chmod 000 does not stop root (these tests may run as root): fail the read itself instead.
    real_copy = shutil.copyfile

    def copyfile(src, dst, *a, **k):
        if str(src).endswith(os.path.join("bob", "ex2_clipped_loss.py")):
            raise PermissionError(13, "Permission denied", str(src))
        return real_copy(src, dst, *a, **k)

    monkeypatch.setattr(shutil, "copyfile", copyfile)
    book = rows(grade(cohort, tmp_path / "out").out_dir)
    assert book["bob"]["status"] == "rejected" and "cannot be read (Permission denied)" in book["bob"]["message"]
    assert book["alice"]["status"] == "graded"


def test_a_fault_of_the_batch_layer_is_recorded_as_crashed(cohort, tmp_path, monkeypatch):
    real = student.stage_submission

    def flaky(entry, dest, limits):
        if entry.student_id == "bob":
            raise OSError(5, "Input/output error")  # ENOSPC stops the whole batch instead (hostile tests)
        return real(entry, dest, limits)

    monkeypatch.setattr(student, "stage_submission", flaky)
    book = rows(grade(cohort, tmp_path / "out").out_dir)
    assert book["bob"]["status"] == "grader_fault" and "Input/output error" in book["bob"]["message"]
    assert book["bob"]["max_total"] == f"{load_points().max_score:g}"  # from grader/points.yaml
    assert (book["alice"]["status"], book["carol"]["status"]) == ("graded", "empty")


def test_a_second_batch_on_the_same_out_dir_is_refused(cohort, tmp_path):
    state = tmp_path / "out" / STATE_DIR
    state.mkdir(parents=True)
    held = lock_out_dir(state)  # what a running batch holds
    try:
        with pytest.raises(BatchBusy, match="another grade-batch"):
            grade(cohort, tmp_path / "out")
    finally:
        held.close()
    assert grade(cohort, tmp_path / "out").count("graded") == 2  # free again


def test_the_report_machinery_is_loaded_once_when_the_last_student_is_sent(tmp_path, monkeypatch):
    # jobs=1 keeps at most 2 students in flight (batch._grade_all), so when the queue runs dry at least
    # 5 - 2 = 3 of 5 students are published, and the callback comes exactly once, before the report.
    subs = tmp_path / "subs"
    for sid in ("s1", "s2", "s3", "s4", "s5"):
        write_student(subs, sid, {"ex1_ratio.py": "ok"})
    out = tmp_path / "out"
    calls: list[int] = []
    monkeypatch.setattr(batch, "preload_drawing",
                        lambda: calls.append(sum((out / s / "results.json").exists() for s in os.listdir(out))))
    grade(subs, out, jobs=1)
    assert len(calls) == 1 and 3 <= calls[0] <= 5
    assert (out / "report.md").is_file()
    calls.clear()
    grade(subs, tmp_path / "out2", jobs=1, report=False)
    assert calls == []
