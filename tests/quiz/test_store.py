"""The quiz store on SQLite and PostgreSQL: migrations, the one-answer and one-attempt rules under races, backups.

The PostgreSQL cases run against a real server the suite starts itself (the
``postgres`` fixture, ``quiz_bank.instructor.server.pg_local``). The schema-1 file is
built with the SQL of the store before SQLAlchemy, kept verbatim in
``fixtures/quiz_store_schema_v1.sql``.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path

import pytest
from sqlalchemy import select, text

from lms.engine import engine_for
from quiz_bank.instructor.server import database
from lms.lti import tables as lti_tables
from quiz_bank.instructor.server.backup import BackupError, backup, restore
from quiz_bank.instructor.server.db import Conflict, QuizDB

V1_SCHEMA = (Path(__file__).parent / "fixtures" / "quiz_store_schema_v1.sql").read_text(encoding="utf-8")
STORES = ["sqlite", pytest.param("postgresql", marks=pytest.mark.xdist_group("postgres"))]


def _v1_file(path: Path) -> list[tuple]:
    """An SQLite file as the pre-SQLAlchemy server left it: two students, a passed and an open attempt."""
    answers = [("ann", 1, 1, "q1", 1, '"a"', 1, 10.0), ("ann", 1, 1, "q2", 2, "[\"b\", \"c\"]", 1, 11.0),
               ("bob", 2, 1, "q9", 1, "0.2", 0, 12.0)]
    with sqlite3.connect(path) as db:
        db.executescript(V1_SCHEMA)
        db.execute("INSERT INTO meta VALUES ('schema_version', '1')")
        db.execute("INSERT INTO students (student_id, name) VALUES ('ann', 'Ann'), ('bob', 'Bob')")
        db.execute("INSERT INTO stop_attempts VALUES ('ann', 1, 1, '[\"q1\", \"q2\"]', 9.0, 11.0, 2, 1)")
        db.execute("INSERT INTO stop_attempts VALUES ('bob', 2, 1, '[\"q9\", \"q8\"]', 9.5, NULL, NULL, NULL)")
        db.executemany("INSERT INTO answers VALUES (?, ?, ?, ?, ?, ?, ?, ?)", answers)
        db.execute("INSERT INTO completions VALUES ('ann', 1, 1, 11.0)")
        db.execute("INSERT INTO revocations VALUES ('bob', 5.0)")
    return answers


def test_a_schema_1_sqlite_file_upgrades_without_losing_an_answer(tmp_path, run_cli):
    path = tmp_path / "old.sqlite"
    before = _v1_file(path)
    code, out, err = run_cli(["quiz", "migrate", "--db", path])
    assert code == 0, err
    assert f"upgraded from schema version 1 (before Alembic) to schema revision {database.head_revision()}" in out
    db = QuizDB(path)
    assert database.current_revision(db.engine) == database.head_revision()
    assert db.all_answers() == [(s, st, a, q, json.loads(r), bool(c)) for s, st, a, q, _, r, c, _ in before]
    assert db.completed_stops("ann") == {1} and db.revoked_before("bob") == 5.0
    assert [r["name"] for r in db.roster()] == ["Ann", "Bob"]
    # The open attempt goes on where it stopped, under the same rules.
    with pytest.raises(Conflict, match="already answered"):
        db.record_answer("bob", 2, 1, "q9", 0.3, True)
    closed = db.record_answer("bob", 2, 1, "q8", 1.0, True)
    assert closed.finished_at is not None and closed.n_correct == 1 and closed.passed is False
    code, out, _ = run_cli(["quiz", "migrate", "--db", path])
    assert code == 0 and "already at schema revision" in out


def test_a_file_of_an_unknown_schema_is_refused(tmp_path):
    path = tmp_path / "odd.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript(V1_SCHEMA)
        db.execute("INSERT INTO meta VALUES ('schema_version', '7')")
    with pytest.raises(RuntimeError, match="schema version '7'"):
        QuizDB(path)


@pytest.mark.parametrize("kind", STORES)
def test_a_fresh_store_is_migrated_to_the_head_revision(kind, store_target, run_cli):
    target = store_target(kind)
    code, out, err = run_cli(["quiz", "migrate", "--db", target])
    assert code == 0, err
    assert f"upgraded from an empty store to schema revision {database.head_revision()}" in out
    with engine_for(target).connect() as conn:
        assert conn.execute(text("SELECT value FROM meta WHERE key = 'schema_version'")).scalar() == "1"


def _race(n: int, fn) -> list:
    """Run ``fn(i)`` in ``n`` threads (i = 0 … n-1) released at once; their results (or exceptions), any order."""
    results, barrier = [], threading.Barrier(n)

    def run(i):
        barrier.wait(timeout=60)
        try:
            results.append(fn(i))
        except Exception as exc:  # noqa: BLE001 - collected for the assertions
            results.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    [t.start() for t in threads]
    [t.join(timeout=120) for t in threads]
    return results


@pytest.mark.parametrize("kind", STORES)
def test_races_between_two_processes_store_one_attempt_and_one_answer(kind, store_target):
    """Two QuizDB objects (two engines, as two server processes have) race on the same student."""
    target = store_target(kind)
    first, second = QuizDB(target), QuizDB(target)
    order = ["q1", "q2", "q3"]
    dbs = (first, second)
    starts = _race(8, lambda i: dbs[i % 2].start_attempt("ann", 3, lambda n: order))
    assert {(a.attempt, a.question_order) for a in starts} == {(1, tuple(order))}, starts
    answers = _race(8, lambda i: dbs[i % 2].record_answer("ann", 3, 1, "q1", "x", True))
    stored = [r for r in answers if not isinstance(r, Exception)]
    assert len(stored) == 1 and all(isinstance(r, Conflict) and "already answered" in str(r)
                                    for r in answers if r not in stored), answers
    for q in ("q2", "q3"):
        first.record_answer("ann", 3, 1, q, "x", True)
    # After the pass, no new attempt may start from either process (the policy reads the store).
    refusals = _race(4, lambda i: dbs[i % 2].start_attempt("ann", 3, lambda n: order,
                                                     may_start=lambda rows, now: "passed" if rows else None))
    assert all(isinstance(r, Conflict) for r in refusals)
    assert first.count_answers() == 3 and second.completed_stops("ann") == {3}
    first.close(), second.close()


@pytest.mark.parametrize("source,target", [("sqlite", "postgresql"), ("postgresql", "sqlite")])
@pytest.mark.xdist_group("postgres")
def test_a_backup_of_one_engine_restores_into_the_other(source, target, store_target, tmp_path, run_cli):
    src = store_target(source)
    db = QuizDB(src)
    db.load_roster([{"student_id": "ann", "name": "Ann"}])
    db.start_attempt("ann", 2, lambda n: ["a", "b"])
    db.record_answer("ann", 2, 1, "a", ["x", "y"], True)
    db.record_answer("ann", 2, 1, "b", 0.25, True)
    db.revoke("bob", now=3.5)
    with db.transaction() as conn:  # what the LTI tool keeps in the store: a posted score, a link, a used nonce
        conn.execute(lti_tables.lti_score.insert(), [dict(issuer="https://lms", client_id="c", lineitem="https://lms/li/2",
                     user_id="u-ann", score=1.0, maximum=1.0, status="posted", attempts=1, error="", updated=4.0)])
        conn.execute(lti_tables.lti_link.insert(), [dict(student_id="ann", issuer="https://lms", client_id="c", link="l1",
                     user_id="u-ann", lineitem="https://lms/li/2", stop=2)])
        conn.execute(lti_tables.lti_nonce_used.insert(), [dict(nonce="n-1", used=4.5)])
    file = tmp_path / "quiz-backup.json"
    code, out, err = run_cli(["quiz", "backup", file, "--db", src])
    assert code == 0 and "2 answer(s), 1 attempt(s), 1 roster student(s)" in out, err
    dst = store_target(target)
    code, out, err = run_cli(["quiz", "restore", file, "--db", dst])
    assert code == 0 and "2 answer(s)" in out, err
    copy = QuizDB(dst)
    assert copy.all_answers() == [("ann", 2, 1, "a", ["x", "y"], True), ("ann", 2, 1, "b", 0.25, True)]
    assert copy.completed_stops("ann") == {2} and copy.revoked_before("bob") == 3.5
    assert copy.attempts("ann") == db.attempts("ann")
    with copy.engine.connect() as conn:  # restored: no score posted twice, no nonce usable again
        assert [tuple(r) for r in conn.execute(select(lti_tables.lti_score.c.user_id, lti_tables.lti_score.c.score,
                                                      lti_tables.lti_score.c.status))] == [("u-ann", 1.0, "posted")]
        assert [tuple(r) for r in conn.execute(select(lti_tables.lti_link.c.student_id, lti_tables.lti_link.c.stop))] == [("ann", 2)]
        assert [tuple(r) for r in conn.execute(select(lti_tables.lti_nonce_used))] == [("n-1", 4.5)]
    code, _, err = run_cli(["quiz", "restore", file, "--db", dst])  # not into a store that holds attempts
    assert code == 2 and "already holds attempts" in err
    db.close(), copy.close()


def test_a_damaged_backup_is_refused_and_restores_nothing(tmp_path):
    db = QuizDB(tmp_path / "a.sqlite")
    db.start_attempt("ann", 1, lambda n: ["q"])
    db.record_answer("ann", 1, 1, "q", "x", False)
    file = tmp_path / "b.json"
    backup(db, file)
    assert file.stat().st_mode & 0o077 == 0  # it may hold the LTI tool's private keys: the owner only
    data = json.loads(file.read_text())
    assert "lti_tool_key" in data["tables"] and "lti_context" in data["tables"]
    data["tables"]["answers"]["rows"].pop()
    file.write_text(json.dumps(data))
    fresh = QuizDB(tmp_path / "fresh.sqlite")
    with pytest.raises(BackupError, match="answers does not match"):
        restore(fresh, file)
    assert fresh.count_answers() == 0 and fresh.all_attempts() == []


def test_serve_refuses_an_unreachable_or_foreign_database_and_zero_workers(run_cli, tmp_path):
    secret = tmp_path / "quiz.secret"
    base = ["quiz", "serve", "--secret-file", secret, "--port", "1"]
    code, _, err = run_cli(base + ["--db", "postgresql://quiz:hunter2@127.0.0.1:1/none"])
    assert code == 2 and "cannot open the quiz store postgresql://quiz:***@127.0.0.1:1/none" in err
    assert "hunter2" not in err  # the password never reaches the log
    code, _, err = run_cli(base + ["--db", "mysql://quiz@127.0.0.1/none"])
    assert code == 2 and "only an SQLite file or a postgresql:// URL" in err
    code, _, err = run_cli(base + ["--db", tmp_path / "q.sqlite", "--workers", "0"])
    assert code == 2 and "--workers must be at least 1" in err


@pytest.mark.parametrize("kind", STORES)
def test_may_sign_in_is_no_roster_or_on_the_roster(kind, store_target):
    """One query for the two every page asked: without a roster anyone may; with one, only its students."""
    db = QuizDB(store_target(kind))
    assert db.may_sign_in("ann") and db.may_sign_in("zed")  # no roster yet: everyone
    db.load_roster([{"student_id": "ann"}])
    assert db.may_sign_in("ann") and not db.may_sign_in("zed") and not db.may_sign_in("")
    db.close()
