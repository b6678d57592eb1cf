"""Quiz scores reach the LMS through the store's queue and the server's worker, never on a student's request.

The LMS here is a real loopback HTTP server (``HangingLMS``) whose score endpoint, while
"down", holds each request until the test lets go (``release``, at most ``HANG_S`` seconds) and
then answers 503; its token endpoint always answers. Each case runs on SQLite and on a real PostgreSQL (the ``postgres`` fixture).
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

import httpx
import pytest
from fastapi.testclient import TestClient

from quiz_server_support import SERVER_SECRET, answer_stop

from lms.lti import tables
from lms.lti.registry import PlatformRegistration
from lms.lti.tool import LtiTool

STORES = ["sqlite", pytest.param("postgresql", marks=pytest.mark.xdist_group("postgres"))]
TOOL_URL = "https://127.0.0.1:9200"
ROSTER = [{"student_id": s, "name": s, "section": "A", "sis_user_id": s, "sis_login_id": "", "canvas_id": "",
           "email": f"{s}@example.edu"} for s in ("s-ada", "s-ben")]
HANG_S = 30.0  # the longest the failing LMS holds a score request before its 503 (unless released earlier)


class HangingLMS:
    """Token and score endpoints on a loopback port; ``down`` makes score requests hang, then fail with 503."""

    def __init__(self) -> None:
        self.down = True
        self.release = threading.Event()  # set: held score requests answer (503) at once
        self.holding = 0  # score requests being held right now
        self.token_scopes: Counter = Counter()
        self.lock = threading.Lock()
        self.tries: list[tuple[str, float]] = []  # (line item path, score) of every score request, failed or not
        self.accepted: list[tuple[str, str, float]] = []  # (line item path, user, score) answered 200
        lms = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.path == "/token":
                    lms.token_scopes[parse_qs(body.decode())["scope"][0]] += 1
                    self._answer(200, {"access_token": "tok", "token_type": "Bearer", "expires_in": 3600})
                    return
                score = json.loads(body)
                lineitem = self.path.removesuffix("/scores")
                lms.tries.append((lineitem, score["scoreGiven"]))
                if lms.down:
                    with lms.lock:
                        lms.holding += 1
                    try:
                        lms.release.wait(HANG_S)
                        self._answer(503, {"error": "unavailable"})
                    finally:
                        with lms.lock:
                            lms.holding -= 1
                    return
                lms.accepted.append((lineitem, score["userId"], score["scoreGiven"]))
                self._answer(200, {})

            def _answer(self, status: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def hanging_lms():
    lms = HangingLMS()
    yield lms
    lms.release.set()
    lms.server.shutdown()


def _course(kind, store_target, tmp_path, bank, checker, lms: HangingLMS):
    from quiz_bank.instructor.server.app import create_app

    # The tool waits longer than the LMS ever holds a request: a hold ends only by the LMS's answer, so a student's
    # request that waited on it could answer only once ``HangingLMS.holding`` is back to 0.
    tool = LtiTool(tmp_path / "lti", TOOL_URL, http=httpx.Client(timeout=2 * HANG_S))
    tool.registry.add(PlatformRegistration(
        issuer=lms.base_url, client_id="c1", deployment_ids=("d1",), auth_login_url=f"{lms.base_url}/auth",
        auth_token_url=f"{lms.base_url}/token", jwks_url=f"{lms.base_url}/jwks"))
    app = create_app(bank, store_target(kind), SERVER_SECRET, roster=ROSTER, checker=checker, lti_tool=tool,
                     passback_options=dict(interval_s=0.05, base_delay_s=0.1, max_delay_s=0.4))
    # the student's launches from three links: stop 1, stop 4 and the whole chapter (stop 0); stops 1 and 4 have
    # no symbolic item, whose sympy check alone can take seconds on a loaded machine
    with tool.engine.connect().execution_options(**tables.WRITE) as conn, conn.begin():
        for link, stop in (("l1", 1), ("l4", 4), ("lch", 0)):
            tables.upsert(conn, tables.lti_link, dict(student_id="s-ada", issuer=lms.base_url, client_id="c1",
                                                      link=link, user_id="u-ada", stop=stop,
                                                      lineitem=f"{lms.base_url}/items/{link}"), ("student_id", "issuer", "link"))
    return app


def _held_while_answered(client: TestClient, lms: HangingLMS) -> list[int]:
    """Wrap ``client``'s requests: for each, how many score requests the LMS was still holding when it answered."""
    held: list[int] = []
    request = client.request

    def noted(*args, **kwargs):
        try:
            return request(*args, **kwargs)
        finally:
            held.append(lms.holding)

    noted.__wrapped__ = request
    client.request = noted
    return held


def _wait(condition, timeout_s: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


@pytest.mark.slow
@pytest.mark.parametrize("kind", STORES)
def test_a_hanging_lms_never_slows_a_student_and_each_score_arrives_once_it_recovers(
        kind, store_target, tmp_path, bank, checker, hanging_lms):
    lms = hanging_lms
    app = _course(kind, store_target, tmp_path, bank, checker, lms)
    with TestClient(app, base_url=TOOL_URL) as browser:
        # without the LMS: s-ben has no link, so her passes queue nothing (and the first variants are warm after)
        browser.cookies.set("ppo_quiz_token", app.state.signer.issue("s-ben"))
        for stop in (1, 4):
            answer_stop(browser, app.state.service, "s-ben", stop)
        assert not lms.tries
        browser.cookies.set("ppo_quiz_token", app.state.signer.issue("s-ada"))
        answer_stop(browser, app.state.service, "s-ada", 1)
        assert _wait(lambda: lms.holding >= 1, 10)  # the worker is now inside a hanging request
        # Judged by cause, not by the clock (a loaded machine makes any bound flaky): every request of stop 4,
        # whose pass queues another score, answers while the LMS still holds the first score request; a
        # request that waited on the LMS would answer only after the hold ends (HANG_S or the release below).
        held = _held_while_answered(browser, lms)
        answer_stop(browser, app.state.service, "s-ada", 4)
        browser.request = browser.request.__wrapped__
        assert {1, 4} <= app.state.service.db.completed_stops("s-ada")
        assert len(held) > 5 and min(held) >= 1, held
        assert not lms.accepted
        lms.release.set()  # the held request answers 503; retries are answered 503 at once until the LMS is up
        # the instructor sees what waits for the LMS, with the LMS's last answer
        assert _wait(lambda: any("503" in r.error for r in app.state.passback_worker.outbox.rows()), 20)
        staff = TestClient(app, base_url=TOOL_URL)
        staff.cookies.set("ppo_quiz_token", app.state.signer.issue("prof", "instructor"))
        dashboard = staff.get("/instructor").text
        assert "Scores waiting for the LMS" in dashboard and "pending" in dashboard and "503" in dashboard
        lms.down = False
        assert _wait(lambda: not app.state.passback_worker.outbox.rows()), app.state.passback_worker.outbox.rows()
        tries = len(lms.tries)
        # passed again (the answer route, a rerun): the same scores make no new request
        for _ in range(3):
            app.state.post_progress("s-ada")
        time.sleep(0.3)
        assert len(lms.tries) == tries
    # one accepted request per line item; the chapter's is 2 stops of 8 (the queued 1/8 was replaced)
    assert sorted(lms.accepted) == [("/items/l1", "u-ada", 1.0), ("/items/l4", "u-ada", 1.0),
                                    ("/items/lch", "u-ada", 0.25)]
    assert lms.token_scopes == Counter({"https://purl.imsglobal.org/spec/lti-ags/scope/score": 1})


@pytest.mark.parametrize("kind", STORES)
def test_a_queued_score_is_posted_once_however_often_it_is_queued_and_a_refusal_is_not_retried(
        kind, store_target, tmp_path):
    from quiz_bank.instructor.server.db import QuizDB

    from lms.lti.outbox import PassbackWorker, ScoreOutbox
    from lms.lti.services import ServiceError

    db = QuizDB(store_target(kind))
    outbox = ScoreOutbox(db.engine)
    posts: list[tuple] = []

    class Services:
        def post_score(self, lineitem, user_id, score, maximum):
            posts.append((lineitem, user_id, score))
            if lineitem == "https://lms/bad":
                raise ServiceError("POST https://lms/bad/scores answered 400: no such line item", retryable=False)

    worker = PassbackWorker(outbox, lambda issuer, client: Services())
    assert outbox.enqueue("https://lms", "c1", "https://lms/li", "u1", 1.0, 1.0)
    assert not outbox.enqueue("https://lms", "c1", "https://lms/li", "u1", 1.0, 1.0)  # already queued
    assert outbox.enqueue("https://lms", "c1", "https://lms/bad", "u1", 0.5, 1.0)
    assert worker.run_once() == 2 and worker.run_once() == 0
    assert not outbox.enqueue("https://lms", "c1", "https://lms/li", "u1", 1.0, 1.0)  # the platform has it
    assert worker.run_once() == 0
    assert sorted(posts) == [("https://lms/bad", "u1", 0.5), ("https://lms/li", "u1", 1.0)]
    [failed] = outbox.rows()
    assert (failed.lineitem, failed.status, failed.attempts) == ("https://lms/bad", "failed", 1)
    assert "400" in failed.error
    with pytest.raises(ValueError, match="outside"):
        outbox.enqueue("https://lms", "c1", "https://lms/li", "u1", 1.5, 1.0)
    db.close()


@pytest.mark.parametrize("kind", STORES)
def test_a_retryable_failure_backs_off_exponentially_and_a_claimed_row_is_not_taken_twice(kind, store_target):
    from quiz_bank.instructor.server.db import QuizDB

    from lms.lti.outbox import PassbackWorker, ScoreOutbox
    from lms.lti.services import ServiceError

    db = QuizDB(store_target(kind))
    outbox = ScoreOutbox(db.engine)

    class Down:
        def post_score(self, *args):
            raise ServiceError("POST answered 503", retryable=True)

    worker = PassbackWorker(outbox, lambda issuer, client: Down(), base_delay_s=10.0, max_delay_s=35.0)
    outbox.enqueue("https://lms", "c1", "https://lms/li", "u1", 1.0, 1.0)
    gaps = []
    for _ in range(4):  # 10, 20, 35 (capped), 35 s: the hand-computed schedule 10·2^k, at most 35
        [row] = outbox.rows()
        # The next try is set from the clock during run_once: bracketed by two readings, not rounded from a
        # later one (a loaded machine may take more than half a second between the two).
        before = time.time()
        assert worker.run_once(now=row.next_try) == 1
        done = time.time()
        [after] = outbox.rows()
        gaps.append(next((g for g in (10, 20, 35) if before + g <= after.next_try <= done + g), after.next_try - done))
    assert gaps == [10, 20, 35, 35] and after.attempts == 4 and after.status == "pending"
    # a row claimed by one worker is not claimed by another until its lease ends
    assert len(outbox.claim_due(after.next_try, lease_s=60)) == 1
    assert outbox.claim_due(after.next_try + 1, lease_s=60) == []
    db.close()
