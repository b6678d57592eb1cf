"""The quiz server cannot be turned against its students (issue 20 items 8 and 9): one test per class.

Item 8: the interactives compute graded quantities, so they are closed while the signed-in student has an
open attempt, and need sign-in. Item 9: sign-in by POST only, cross-site POSTs refused, a confirmation
before another identity replaces a session, expiring and revocable tokens, a Secure cookie over HTTPS (or
behind a trusted proxy that says so), framing refused.
"""

from __future__ import annotations

from fastapi.testclient import TestClient
from quiz_server_support import SERVER_SECRET

from quiz_bank.instructor.server.auth import TokenSigner

SIGNER = TokenSigner(SERVER_SECRET)


def _signed_in(app, student, **headers):
    client = TestClient(app, **headers)
    assert client.post("/login", data={"token": SIGNER.issue(student)}).status_code == 200
    return client


# ---------------------------------------------------------------- item 8: the interactives


def test_the_interactives_need_sign_in(quiz_server):
    app, _ = quiz_server()
    anonymous = TestClient(app)
    response = anonymous.get("/api/clip", params={"r": 1.3, "adv": 1.0, "eps": 0.2})
    assert response.status_code == 401 and "Sign in first" in response.json()["error"]
    assert anonymous.get("/interactive/clip", follow_redirects=False).status_code == 303


def test_the_interactives_are_closed_while_an_attempt_is_open_and_open_again_after(quiz_server):
    from quiz_server_support import answer_stop

    app, sign_in = quiz_server()
    ann = sign_in("ann")
    assert ann.get("/api/clip", params={"r": 1.3, "adv": 1.0}).status_code == 200  # between attempts: open
    ann.post("/stop/1/start")
    for path, params in [("/api/clip", {"r": 1.3, "adv": 1.0}), ("/api/buffer", {"actions": "collect"}),
                         ("/api/step", {}), ("/api/danger", {}), ("/interactive/clip", {}), ("/interactive/step", {}),
                         ("/interactive/buffer", {}), ("/interactive/danger", {}), ("/interactive", {})]:
        response = ann.get(path, params=params)
        assert response.status_code == 403, path
        assert "closed while your attempt at stop 1 is open" in response.text, path
    bob = sign_in("bob")  # another student, no attempt open: not affected
    assert bob.get("/api/clip", params={"r": 1.3, "adv": 1.0}).status_code == 200
    answer_stop(ann, app.state.service, "ann", 1)  # the attempt ends: open again
    assert ann.get("/api/clip", params={"r": 1.3, "adv": 1.0}).status_code == 200


def test_interactive_pages_keep_the_name_and_sign_out(quiz_server):
    app, sign_in = quiz_server()
    page = sign_in("ann").get("/interactive/clip").text
    assert 'class="who">ann<' in page and "Sign out" in page


# ---------------------------------------------------------------- item 9: sign-in


def test_a_sign_in_link_never_signs_anyone_in(quiz_server):
    app, sign_in = quiz_server()
    client = TestClient(app)
    response = client.get("/login", params={"token": SIGNER.issue("ann")}, follow_redirects=False)
    assert response.status_code == 200 and "Sign-in links are not accepted" in response.text
    assert "ppo_quiz_token" not in response.headers.get("set-cookie", "")
    assert client.get("/stop/1", follow_redirects=False).status_code == 303  # still signed out


def test_a_cross_site_sign_in_post_is_refused(quiz_server):
    app, _ = quiz_server()
    ann = _signed_in(app, "ann")
    for headers in ({"Sec-Fetch-Site": "cross-site"}, {"Origin": "https://evil.example"},
                    {"Sec-Fetch-Site": "same-site", "Origin": "http://testserver.evil"}):
        response = ann.post("/login", data={"token": SIGNER.issue("bob")}, headers=headers, follow_redirects=False)
        assert response.status_code == 403 and ("another site" in response.text or "another origin" in response.text)
    assert 'class="who">ann<' in ann.get("/").text  # ann is still ann
    same = ann.post("/stop/1/start", headers={"Sec-Fetch-Site": "same-origin", "Origin": "http://testserver"})
    assert same.status_code == 200
    cross = ann.post("/stop/1/answer", headers={"Sec-Fetch-Site": "cross-site"}, data={"answer": "a"})
    assert cross.status_code == 403 and app.state.service.db.count_answers() == 0


def test_replacing_a_signed_in_identity_needs_confirmation(quiz_server):
    app, _ = quiz_server()
    ann = _signed_in(app, "ann")
    bob_token = SIGNER.issue("bob")
    response = ann.post("/login", data={"token": bob_token}, follow_redirects=False)
    assert response.status_code == 200 and "You are signed in as" in response.text and "confirm-sign-in" in response.text
    assert 'class="who">ann<' in ann.get("/").text  # not replaced yet
    response = ann.post("/login", data={"token": bob_token, "confirm": "yes"})
    assert response.status_code == 200 and 'class="who">bob<' in response.text


def test_tokens_expire_and_can_be_revoked(quiz_server, run_cli, tmp_path):
    app, _ = quiz_server()
    client = TestClient(app)
    expired = SIGNER.issue("ann", valid_days=1, now=1_000_000.0)  # expired long ago
    response = client.post("/login", data={"token": expired})
    assert response.status_code == 401 and "expired" in response.text
    ann = _signed_in(app, "ann")
    code, out, err = run_cli(["quiz", "revoke", "ann", "--db", tmp_path / "quiz.sqlite"])
    assert code == 0, err
    response = ann.get("/stop/1")
    assert response.status_code == 401 and "revoked" in response.text
    assert _signed_in(app, "ann").get("/stop/1").status_code == 200  # a token issued after the revocation works


def test_the_cookie_is_secure_over_https_or_a_trusted_proxy_and_lasts_hours(quiz_server, bank, checker, tmp_path):
    from quiz_bank.instructor.server.app import create_app

    app, _ = quiz_server()

    def cookie(app, base="http://testserver", **headers):
        response = TestClient(app, base_url=base).post("/login", data={"token": SIGNER.issue("ann")},
                                                       headers=headers, follow_redirects=False)
        return response.headers["set-cookie"]

    plain = cookie(app)
    assert "Secure" not in plain and "HttpOnly" in plain and "SameSite=strict" in plain
    max_age = int(plain.split("Max-Age=")[1].split(";")[0])
    assert 0 < max_age <= 24 * 3600
    assert "Secure" in cookie(app, base="https://testserver")
    assert "Secure" not in cookie(app, **{"X-Forwarded-Proto": "https"})  # an untrusted header is ignored
    trusting = create_app(bank, tmp_path / "p.sqlite", SERVER_SECRET, checker=checker, trust_proxy=True)
    assert "Secure" in cookie(trusting, **{"X-Forwarded-Proto": "https"})


def test_framing_is_refused_on_every_page(quiz_server):
    app, _ = quiz_server()
    for path in ("/", "/login", "/static/style.css"):
        response = TestClient(app).get(path)
        assert response.headers["x-frame-options"] == "DENY"
        assert "frame-ancestors 'none'" in response.headers["content-security-policy"]


def test_tokens_command_writes_fragment_links_that_expire(run_cli, tmp_path):
    secret = tmp_path / "s"
    secret.write_text("ab" * 32)
    code, out, _ = run_cli(["quiz", "tokens", "--instructor", "tia", "--secret-file", secret, "--valid-days", 2])
    assert code == 0
    row = out.strip().splitlines()[1].split(",")
    assert row[3].startswith("/login#token=") and "?token=" not in out
    who = TokenSigner(b"ab" * 32).verify(row[2])
    assert who.student_id == "tia"
    import time

    try:
        TokenSigner(b"ab" * 32).verify(row[2], now=time.time() + 3 * 86400)
    except Exception as exc:  # noqa: BLE001 - the AuthError's message is what matters
        assert "expired" in str(exc)
    else:
        raise AssertionError("a 2-day token verified 3 days later")


def test_a_student_taken_off_the_roster_loses_access_at_the_next_start(tmp_path, bank, checker):
    """Red team (round 4): the stored roster only grew, so a token of a student taken off the roster CSV kept
    working until it expired. The roster given at start now replaces the stored one; the answers stay."""
    from quiz_bank.instructor.server.app import create_app
    from quiz_bank.instructor.server.db import QuizDB

    db_path = tmp_path / "quiz.sqlite"
    both = [{"student_id": "ann"}, {"student_id": "bob"}]
    app = create_app(bank, db_path, SERVER_SECRET, roster=both, checker=checker)
    bob = _signed_in(app, "bob")
    assert bob.get("/").status_code == 200
    QuizDB(db_path).start_attempt("bob", 1, lambda n: ["q"])  # bob's work so far
    app = create_app(bank, db_path, SERVER_SECRET, roster=[{"student_id": "ann"}], checker=checker)
    token = SIGNER.issue("bob")
    refused = TestClient(app).post("/login", data={"token": token}, follow_redirects=False)
    assert refused.status_code == 401 and "not on this course" in refused.text
    from quiz_bank.instructor.server.app import COOKIE

    kept = TestClient(app, cookies={COOKIE: token})  # bob's session cookie from before the restart
    assert 'name="token"' in kept.get("/").text  # the sign-in page: the cookie names nobody now
    assert 'name="token"' not in _signed_in(app, "ann").get("/").text
    assert _signed_in(app, "ann").get("/").status_code == 200
    store = QuizDB(db_path)
    assert not store.on_roster("bob") and store.on_roster("ann")
    assert [a.student_id for a in store.attempts("bob")] == ["bob"]  # the answers stay
