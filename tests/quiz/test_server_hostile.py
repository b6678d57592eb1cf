"""Hostile input to the quiz server: each is refused (or escaped) with a clear message and records nothing."""

from __future__ import annotations

from fastapi.testclient import TestClient
from quiz_server_support import SERVER_SECRET, current_question, form_answer

from quiz_bank.instructor.server.auth import TokenSigner


def _first_question(client, stop=1):
    page = client.post(f"/stop/{stop}/start").text
    return current_question(page)


def test_a_token_signed_with_another_secret_or_altered_is_refused(quiz_server):
    app, _ = quiz_server()
    client = TestClient(app)
    forged = TokenSigner(b"not-the-course-secret-" * 3).issue("ann")
    response = client.post("/login", data={"token": forged})
    assert response.status_code == 401 and "not valid: it was altered or issued for another course" in response.text
    good = TokenSigner(SERVER_SECRET).issue("ann")
    altered = good[:-2] + ("A" if good[-2] != "A" else "B") + good[-1]
    assert client.post("/login", data={"token": altered}).status_code == 401
    client.cookies.set("ppo_quiz_token", altered)
    response = client.get("/stop/1")
    assert response.status_code == 401 and "not valid" in response.text
    assert app.state.service.db.attempts("ann") == []


def test_a_student_not_on_the_roster_is_refused(quiz_server):
    app, _ = quiz_server()
    response = TestClient(app).post("/login", data={"token": TokenSigner(SERVER_SECRET).issue("mallory")})
    assert response.status_code == 401 and "&#39;mallory&#39; is not on this course&#39;s roster; ask your TA" in response.text


def test_another_students_form_is_refused_and_nothing_is_recorded(quiz_server):
    app, sign_in = quiz_server()
    service = app.state.service
    ann, bob = sign_in("ann"), sign_in("bob")
    attempt, qid = _first_question(ann)
    # bob posts a form that belongs to ann (a shared computer, a copied page): refused.
    value = form_answer(service, "ann", qid, attempt)
    response = bob.post("/stop/1/answer", data={"student": "ann", "attempt": str(attempt), "question": qid, "answer": value})
    assert response.status_code == 403 and "belongs to student &#39;ann&#39;" in response.text
    assert "signed in as &#39;bob&#39;: nothing was recorded" in response.text
    assert service.db.count_answers() == 0


def test_a_forged_attempt_number_is_refused(quiz_server):
    app, sign_in = quiz_server()
    client, service = sign_in("ann"), app.state.service
    attempt, qid = _first_question(client)
    value = form_answer(service, "ann", qid, attempt)
    response = client.post("/stop/1/answer", data={"student": "ann", "attempt": "7", "question": qid, "answer": value})
    assert response.status_code == 409 and "attempt 7 of stop 1 does not exist for you" in response.text
    response = client.post("/stop/1/answer", data={"student": "ann", "attempt": "1; DROP TABLE answers", "question": qid, "answer": value})
    assert response.status_code == 400 and "attempt number is not a number" in response.text
    assert service.db.count_answers() == 0


def test_an_answer_to_a_question_not_in_the_variant_or_not_next_is_refused(quiz_server):
    app, sign_in = quiz_server()
    client, service = sign_in("ann"), app.state.service
    attempt, qid = _first_question(client)
    response = client.post("/stop/1/answer", data={"student": "ann", "attempt": str(attempt), "question": "stop2.epsilon", "answer": "0.2"})
    assert response.status_code == 409 and "&#39;stop2.epsilon&#39; is not in your attempt 1 of stop 1" in response.text
    later = service.db.attempts("ann", 1)[0].question_order[5]
    response = client.post("/stop/1/answer", data={"student": "ann", "attempt": str(attempt), "question": later,
                                                   "answer": form_answer(service, "ann", later, attempt)})
    assert response.status_code == 409 and "is not the next question of attempt 1" in response.text
    assert service.db.count_answers() == 0


def test_an_answer_given_twice_counts_once(quiz_server):
    app, sign_in = quiz_server()
    client, service = sign_in("ann"), app.state.service
    attempt, qid = _first_question(client)
    data = {"student": "ann", "attempt": str(attempt), "question": qid, "answer": form_answer(service, "ann", qid, attempt, right=False)}
    assert client.post("/stop/1/answer", data=data).status_code == 200
    data["answer"] = form_answer(service, "ann", qid, attempt, right=True)  # a second try at the same question
    replay = client.post("/stop/1/answer", data=data)
    assert replay.status_code == 409 and "already answered in attempt 1; your first answer stands" in replay.text
    stored = service.db.answers("ann", 1, 1)
    assert list(stored) == [qid] and stored[qid].correct is False


def test_oversized_bodies_are_refused_declared_or_streamed(quiz_server):
    app, sign_in = quiz_server()
    client, service = sign_in("ann"), app.state.service
    attempt, qid = _first_question(client)
    huge = "1" * 100_000
    response = client.post("/stop/1/answer", data={"student": "ann", "attempt": str(attempt), "question": qid, "answer": huge})
    assert response.status_code == 413 and "larger than 16 KiB" in response.text

    def chunks():  # no Content-Length: the limit counts the bytes as they arrive
        yield b"student=ann&attempt=1&question=" + qid.encode() + b"&answer="
        for _ in range(40):
            yield b"9" * 1000

    response = client.post("/stop/1/answer", content=chunks(), headers={"content-type": "application/x-www-form-urlencoded"})
    assert response.status_code == 413
    long_answer = "1" * 600  # under the body limit, over the answer limit
    response = client.post("/stop/1/answer", data={"student": "ann", "attempt": str(attempt), "question": qid, "answer": long_answer})
    assert response.status_code == 400 and "longer than 500 characters" in response.text
    assert service.db.count_answers() == 0


def test_html_in_an_answer_is_shown_as_text_never_run(quiz_server, bank):
    app, sign_in = quiz_server()
    client, service = sign_in("ann"), app.state.service
    attempt = client.post("/stop/2/start") and service.db.attempts("ann", 2)[0].attempt
    order = service.db.attempts("ann", 2)[0].question_order
    # Answer until a text question (numeric or symbolic) is next, then send markup.
    for i, qid in enumerate(order):
        if bank.by_id[qid].type in ("numeric", "symbolic"):
            break
        client.post("/stop/2/answer", data={"student": "ann", "attempt": str(attempt), "question": qid,
                                            "answer": form_answer(service, "ann", qid, attempt)})
    payload = '<script>alert("x")</script><img src=x onerror=alert(1)>'
    response = client.post("/stop/2/answer", data={"student": "ann", "attempt": str(attempt), "question": qid, "answer": payload})
    assert response.status_code == 400 and "Nothing was recorded; answer again" in response.text
    assert "<script>alert" not in response.text and "<img src=x" not in response.text
    assert "&lt;script&gt;" in response.text
    assert qid not in service.db.answers("ann", 2, attempt)


def test_a_student_token_cannot_open_the_dashboard_or_the_gradebook(quiz_server):
    app, sign_in = quiz_server()
    client = sign_in("ann")
    for path in ("/instructor", "/instructor/gradebook.csv", "/instructor/gradebook.canvas"):
        response = client.get(path)
        assert response.status_code == 403 and "needs an instructor token" in response.text


def test_malformed_paths_and_parameters_get_a_clear_400(quiz_server):
    app, sign_in = quiz_server()
    client = sign_in("ann")
    page = client.get("/stop/abc")
    assert page.status_code == 400 and "Malformed request: path.n:" in page.text
    assert client.get("/stop/9").status_code == 404 and "the chapter has stops 1–8" in client.get("/stop/9").text
    api = client.get("/api/clip", params={"r": "<b>1</b>"})
    assert api.status_code == 400 and api.json()["error"].startswith("malformed request: query.r")
    assert "<b>" not in client.get("/interactive/clip", params={"r": "<b>1</b>"}).text
