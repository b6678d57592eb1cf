"""The quiz server as a real process on loopback: killed mid-attempt and restarted, and students at once.

Fast profile: the crash test answers a few questions; the load test has 50
students (SQLite) or 24 (PostgreSQL) answer 3 questions each, through two
server processes, with one deliberate double submission and one double start
each. ``benchmarks/bench_quiz.py`` measures throughput and latency.
"""

from __future__ import annotations

import sqlite3
import threading

import httpx
import pytest
from quiz_server_support import ServerProcess, current_question, form_answer, offline_service

pytestmark = pytest.mark.slow


def _client(server: ServerProcess, student: str) -> httpx.Client:
    client = httpx.Client(base_url=server.url, follow_redirects=True, timeout=120.0)
    response = client.post("/login", data={"token": server.token(student)})
    assert response.status_code == 200, response.text
    return client


def _answer_next(client: httpx.Client, service, student: str, stop: int, right: bool = True) -> tuple[int, str, httpx.Response]:
    attempt, qid = current_question(client.get(f"/stop/{stop}").text)
    value = form_answer(service, student, qid, attempt, right=right)
    data = {"student": student, "attempt": str(attempt), "question": qid, "answer": value}
    return attempt, qid, client.post(f"/stop/{stop}/answer", data=data)


def _rows(db_path, sql, args=()):
    with sqlite3.connect(db_path) as db:
        return db.execute(sql, args).fetchall()


def test_killing_the_server_mid_attempt_loses_no_committed_answer_and_counts_nothing_twice(tmp_path, bank):
    service = offline_service(bank)
    server = ServerProcess(tmp_path, ["ann"]).start()
    try:
        client = _client(server, "ann")
        assert client.post("/stop/6/start").status_code == 200
        answered = []
        for i in range(3):
            attempt, qid, response = _answer_next(client, service, "ann", 6, right=i != 1)
            assert response.status_code == 200 and "verdict" in response.text
            answered.append(qid)
        server.kill()  # SIGKILL, mid-attempt: no shutdown code runs
    finally:
        server.kill()
    # Every answer the client got a verdict for is on disk, once.
    stored = _rows(server.db, "SELECT question_id, correct FROM answers WHERE student_id = 'ann' ORDER BY position")
    assert [q for q, _ in stored] == answered and [c for _, c in stored] == [1, 0, 1]
    restarted = ServerProcess(tmp_path, ["ann"], port=None).start()
    try:
        client = _client(restarted, "ann")
        page = client.get("/stop/6").text
        attempt, qid = current_question(page)  # resumes the same attempt at its 4th question
        assert attempt == 1 and "question 4/" in page and qid not in answered
        replay = client.post("/stop/6/answer", data={"student": "ann", "attempt": "1", "question": answered[0],
                                                     "answer": form_answer(service, "ann", answered[0], 1)})
        assert replay.status_code == 409 and "already answered" in replay.text
        assert client.post("/stop/6/start").status_code == 200  # the open attempt, not a new one
        assert _rows(restarted.db, "SELECT COUNT(*) FROM stop_attempts WHERE student_id = 'ann'") == [(1,)]
        assert _rows(restarted.db, "SELECT COUNT(*) FROM answers WHERE student_id = 'ann'") == [(3,)]
    finally:
        restarted.kill()


# One server start per store (a start costs most of such a test); one process is covered by the kill tests.
RACES = [pytest.param("sqlite", 2, 50, id="sqlite-2proc-50"),
         pytest.param("postgresql", 2, 24, id="postgresql-2proc-24", marks=pytest.mark.xdist_group("postgres"))]


def _count(server: ServerProcess, sql: str) -> list[tuple]:
    from sqlalchemy import text

    from lms.engine import engine_for

    engine = engine_for(server.db)
    try:
        with engine.connect() as conn:
            return [tuple(r) for r in conn.execute(text(sql))]
    finally:
        engine.dispose()


@pytest.mark.parametrize("kind,workers,n_students", RACES)
def test_students_at_once_every_answer_stored_exactly_once(kind, workers, n_students, tmp_path, bank, store_target):
    """Students answer at once, each double-clicking one answer and starting the stop twice at once:
    one attempt and one answer each, whichever server process took which request."""
    students = [f"s{i:02d}" for i in range(n_students)]
    service = offline_service(bank)
    errors: list[str] = []
    barrier = threading.Barrier(len(students))

    def student_run(student: str) -> None:
        try:
            client = _client(server, student)
            barrier.wait(timeout=120)
            starts = []
            pair = [threading.Thread(target=lambda: starts.append(client.post("/stop/1/start").status_code))
                    for _ in range(2)]
            [t.start() for t in pair]
            [t.join() for t in pair]
            assert starts == [200, 200], starts  # both land on the one open attempt
            for i in range(3):
                attempt, qid = current_question(client.get("/stop/1").text)
                data = {"student": student, "attempt": str(attempt), "question": qid,
                        "answer": form_answer(service, student, qid, attempt)}
                if i == 0:  # a double click: the same answer posted twice at once
                    results = []
                    twins = [threading.Thread(target=lambda: results.append(client.post("/stop/1/answer", data=data).status_code))
                             for _ in range(2)]
                    [t.start() for t in twins]
                    [t.join() for t in twins]
                    assert sorted(results) == [200, 409], results  # one stored, one told "already answered"
                else:
                    assert client.post("/stop/1/answer", data=data).status_code == 200
            client.close()
        except Exception as exc:  # collected, reported below
            errors.append(f"{student}: {type(exc).__name__}: {exc}")

    with ServerProcess(tmp_path, students, db=store_target(kind), workers=workers) as server:
        threads = [threading.Thread(target=student_run, args=(s,)) for s in students]
        [t.start() for t in threads]
        [t.join(timeout=600) for t in threads]
    assert not errors, "\n".join(errors[:5])
    per_student = dict(_count(server, "SELECT student_id, COUNT(*) FROM answers GROUP BY student_id"))
    assert per_student == {s: 3 for s in students}
    assert _count(server, "SELECT COUNT(*) FROM stop_attempts") == [(n_students,)]
    assert _count(server, "SELECT COUNT(*) FROM (SELECT DISTINCT student_id, question_id FROM answers) AS d") == [
        (3 * n_students,)]
