"""kill -9 during an answer storm, then backup and restore: every acknowledged answer is in the restored store.

A real ``quiz serve`` (its own process group: uvicorn's supervisor and every
worker) takes answers from client threads; SIGKILL hits all of them in the
middle of the storm. ``quiz backup`` then copies the store, ``quiz restore``
loads the copy into a fresh SQLite file, and every answer a client got HTTP
200 for must be there with its verdict (the server acknowledges an answer only
after its transaction committed). A restarted server resumes each student's
attempt after the last stored answer. Fast profile: about two seconds of storm.
"""

from __future__ import annotations

import threading
import time

import httpx
import pytest
from quiz_server_support import ServerProcess, current_question, form_answer, offline_service

from quiz_bank.instructor.server.db import QuizDB

pytestmark = pytest.mark.slow
STORM_S = 2.0


def _storm(server: ServerProcess, service, students: list[str], acked: list, stop_flag: threading.Event, errors: list):
    def run(student: str) -> None:
        client = httpx.Client(base_url=server.url, follow_redirects=True, timeout=60.0)
        try:
            assert client.post("/login", data={"token": server.token(student)}).status_code == 200
            for stop in range(1, 9):
                page = client.post(f"/stop/{stop}/start").text
                while 'name="question"' in page:
                    attempt, qid = current_question(page)
                    right = hash((student, qid)) % 3 != 0
                    data = {"student": student, "attempt": str(attempt), "question": qid,
                            "answer": form_answer(service, student, qid, attempt, right=right)}
                    response = client.post(f"/stop/{stop}/answer", data=data)
                    if response.status_code == 200:
                        acked.append((student, stop, attempt, qid, right))
                    page = client.get(f"/stop/{stop}").text
        except (httpx.HTTPError, AssertionError, AttributeError):
            if not stop_flag.is_set():  # before the kill every request must work
                errors.append(student)
        finally:
            client.close()

    return [threading.Thread(target=run, args=(s,), daemon=True) for s in students]


@pytest.mark.parametrize("kind,workers", [pytest.param("sqlite", 1, id="sqlite-1proc"),
                                          pytest.param("postgresql", 2, id="postgresql-2proc",
                                                       marks=pytest.mark.xdist_group("postgres"))])
def test_every_acknowledged_answer_survives_kill_9_backup_and_restore(kind, workers, tmp_path, bank, store_target,
                                                                      run_cli):
    service = offline_service(bank)
    students = [f"k{i}" for i in range(6)]
    acked: list[tuple] = []
    errors: list[str] = []
    killed = threading.Event()
    server = ServerProcess(tmp_path, students, db=store_target(kind), workers=workers).start()
    try:
        threads = _storm(server, service, students, acked, killed, errors)
        [t.start() for t in threads]
        deadline = time.monotonic() + 120
        while len(acked) < 10 and time.monotonic() < deadline:  # the storm is under way
            time.sleep(0.1)
        time.sleep(STORM_S)
        killed.set()
        server.kill()  # SIGKILL the whole process group mid-storm
    finally:
        killed.set()
        server.kill()
    [t.join(timeout=120) for t in threads]
    assert not errors, errors
    assert len(acked) >= 10, "the storm never got going"
    backup_file = tmp_path / "backup.json"
    code, out, err = run_cli(["quiz", "backup", backup_file, "--db", server.db])
    assert code == 0, err
    restored = tmp_path / "restored.sqlite"
    code, out, err = run_cli(["quiz", "restore", backup_file, "--db", restored])
    assert code == 0, err
    stored = {(s, st, a, q): c for s, st, a, q, _, c in QuizDB(restored).all_answers()}
    missing = [x for x in acked if x[:4] not in stored]
    assert not missing, f"{len(missing)} acknowledged answer(s) lost, e.g. {missing[:3]}"
    assert all(stored[x[:4]] == x[4] for x in acked)  # with the verdict the student was given
    assert len(stored) >= len(acked) and len(stored) <= len(acked) + len(students)  # at most one in flight each
    # A restarted server on the same store resumes each student after the last stored answer.
    restarted = ServerProcess(tmp_path, students, db=server.db, workers=1).start()
    try:
        client = httpx.Client(base_url=restarted.url, follow_redirects=True, timeout=60.0)
        client.post("/login", data={"token": restarted.token(students[0])})
        mine = sorted((st, a, q) for s, st, a, q in stored if s == students[0])
        page = client.get(f"/stop/{mine[-1][0]}").text
        if 'name="question"' in page:
            assert current_question(page)[1] not in {q for _, _, q in mine}
    finally:
        restarted.kill()
