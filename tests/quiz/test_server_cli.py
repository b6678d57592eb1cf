"""`ppo-course quiz tokens` and `quiz export`'s refusals: the TA's side of the server from the command line."""

from __future__ import annotations

import csv
import stat

from quiz_server_support import write_roster

from quiz_bank.instructor.server.auth import TokenSigner, load_secret


def test_tokens_for_a_roster_verify_with_the_secret_and_files_are_private(run_cli, tmp_path):
    roster = write_roster(tmp_path / "roster.csv", ["ann", "bob"])
    secret, out = tmp_path / "quiz.secret", tmp_path / "tokens.csv"
    code, _, err = run_cli(["quiz", "tokens", "--roster", roster, "--secret-file", secret, "--instructor", "prof", "--out", out])
    assert code == 0, err
    rows = list(csv.DictReader(open(out, encoding="utf-8")))
    assert [(r["student_id"], r["role"]) for r in rows] == [("ann", "student"), ("bob", "student"), ("prof", "instructor")]
    signer = TokenSigner(load_secret(secret))
    assert [signer.verify(r["token"]).student_id for r in rows] == ["ann", "bob", "prof"]
    assert signer.verify(rows[2]["token"]).is_instructor and rows[0]["login_path"] == f"/login#token={rows[0]['token']}"
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600 and stat.S_IMODE(out.stat().st_mode) == 0o600
    # Rerunning issues new tokens (each carries its issue time and expiry) and does not void the ones handed out.
    code, again, _ = run_cli(["quiz", "tokens", "--roster", roster, "--secret-file", secret])
    assert code == 0 and "ann,student," in again and signer.verify(rows[0]["token"]).student_id == "ann"


def test_a_roster_without_student_id_or_with_a_repeat_is_refused(run_cli, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("name,email\nAnn,ann@x\n", encoding="utf-8")
    code, _, err = run_cli(["quiz", "tokens", "--roster", bad, "--secret-file", tmp_path / "s"])
    assert code == 2 and "the roster needs a student_id column (found: name, email)" in err
    twice = tmp_path / "twice.csv"
    twice.write_text("student_id\nann\nann\n", encoding="utf-8")
    code, _, err = run_cli(["quiz", "tokens", "--roster", twice, "--secret-file", tmp_path / "s"])
    assert code == 2 and "twice.csv:3: student_id 'ann' appears twice" in err


def test_export_without_a_database_says_so(run_cli, tmp_path):
    code, _, err = run_cli(["quiz", "export", "--db", tmp_path / "none.sqlite", "--out", tmp_path / "g.csv"])
    assert code == 2 and "none.sqlite does not exist" in err and not (tmp_path / "g.csv").exists()


def test_canvas_export_names_the_students_it_leaves_out_and_counts_only_students(run_cli, tmp_path):
    """A roster student without a Canvas identifier is left out of the Canvas file: the command says so.

    Found trying the TA guide as a new user: the Canvas file held only its "Points Possible"
    row while the command printed "1 row(s)" and nothing on stderr.
    """
    from quiz_bank.instructor.server.db import QuizDB

    roster = tmp_path / "roster.csv"
    roster.write_text("student_id,name,sis_user_id\nann,Ann A,S-1\nbob,Bob B,\n", encoding="utf-8")
    db = tmp_path / "quiz.sqlite"
    QuizDB(db)  # the server's database, as `quiz serve --db` creates it
    out = tmp_path / "canvas.csv"
    code, stdout, stderr = run_cli(["quiz", "export", "--db", db, "--roster", roster, "--format", "canvas", "--out", out])
    assert code == 0, stderr
    rows = list(csv.reader(open(out, encoding="utf-8")))
    assert [r[2] for r in rows[2:]] == ["S-1"]  # ann only: Canvas matches her by her SIS User ID
    assert "left out 'bob'" in stderr and "1 student(s) are not in" in stderr
    assert "(canvas, 1 student row(s))" in stdout
    code, stdout, stderr = run_cli(["quiz", "export", "--db", db, "--format", "csv", "--out", tmp_path / "g.csv"])
    assert code == 0 and "(csv, 2 student row(s))" in stdout and "left out" not in stderr
