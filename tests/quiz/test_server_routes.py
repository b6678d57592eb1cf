"""`ppo-course quiz serve`'s routes through the test client: sign-in, one question at a time, the 100% rule,
the review without the key, attempt policies, the dashboard, the gradebook layouts and the interactives."""

from __future__ import annotations

import csv
import io
import re

import pytest
from quiz_server_support import answer_stop, current_question, form_answer

from quiz_bank.engine import expected_answer


def esc(text: str) -> str:
    """``text`` as Jinja2's autoescape writes it into a page."""
    from markupsafe import escape

    return str(escape(text))


def test_signed_out_visitor_gets_the_sign_in_form_and_a_student_sees_eight_stops(quiz_server):
    app, sign_in = quiz_server()
    from fastapi.testclient import TestClient

    page = TestClient(app).get("/")
    assert page.status_code == 200 and 'name="token"' in page.text and "Stop 1" not in page.text
    home = sign_in("ann").get("/")
    assert all(f'href="/stop/{s}"' in home.text for s in range(1, 9)) and "0/8 stops passed" in home.text
    # Under the mastery rule (the default) the count is the stop's claims, named as such (an attempt may ask more
    # questions than that: a claim is asked twice where one question alone could be guessed).
    from quiz_bank import mastery

    n_claims = len(mastery.stop_claims(app.state.service.bank, 2))
    assert "<th>asks</th>" in home.text and f"<td>{n_claims} claims</td>" in home.text


def test_a_wrong_answer_is_told_at_once_the_stop_fails_and_the_review_hides_the_key(quiz_server, bank):
    app, sign_in = quiz_server(mode="cooldown")  # the older policy: a verdict per answer, every question each attempt
    client, service = sign_in("ann"), app.state.service
    pages = answer_stop(client, service, "ann", 1, wrong={1})
    assert 'id="verdict">Not right.' in pages[0] and all('id="verdict">Right.' in p for p in pages[1:])
    n = len(bank.questions(1))
    assert f"Attempt over: {n - 1}/{n} right" in pages[-1] and "passed" not in pages[-1]
    missed = service.db.attempts("ann", 1)[0].question_order[0]
    q = bank.by_id[missed]
    review = client.get("/stop/1").text
    assert 'id="stop-failed"' in review and "Start attempt 2" in review
    # The missed question's explanation is withheld, and its right option is not restated.
    if q.explanation:  # a generated item has none to leak
        assert esc(q.explanation[:30]) not in review
    assert esc((q.hint or "Reread the section cited here.")[:30]) in review
    if q.type == "single":
        right_text = next(o.text for o in q.options if o.id == q.answer)
        item = review.split(esc(q.prompt[:40]))[1].split("</li>")[0]
        assert esc(right_text) not in item


def test_the_retry_is_a_fresh_order_fresh_variants_and_passing_shows_the_explanations(quiz_server, bank):
    app, sign_in = quiz_server(mode="cooldown")  # the older policy: a verdict per answer, every question each attempt
    client, service = sign_in("bob"), app.state.service
    answer_stop(client, service, "bob", 2, wrong={3})
    pages = answer_stop(client, service, "bob", 2)
    first, second = service.db.attempts("bob", 2)
    assert (first.attempt, second.attempt) == (1, 2) and first.question_order != second.question_order
    parametric = [q for q in bank.questions(2) if q.is_parametric]
    assert any(service.variant("bob", q.id, 1).params != service.variant("bob", q.id, 2).params for q in parametric)
    n = len(bank.questions(2))
    assert f'id="stop-passed">Stop 2 passed: {n}/{n}' in pages[-1]
    done = client.get("/stop/2").text
    explained = [q for q in bank.questions(2) if q.explanation]
    assert all(esc(q.explanation[:25]) in done for q in explained)
    assert "Start attempt" not in done and second.passed and not first.passed


def test_options_are_shuffled_per_attempt_and_the_page_posts_labels_not_option_ids(quiz_server, bank):
    app, sign_in = quiz_server()
    service = app.state.service
    single = [q for q in bank.questions() if q.type == "single"]
    orders = {(q.id, a): tuple(o for _, o, _ in service.variant("cat", q.id, a).choices) for q in single for a in (1, 2)}
    moved = sum(orders[(q.id, 1)] != orders[(q.id, 2)] for q in single)
    assert moved >= len(single) // 2  # a 4-option shuffle keeps its order 1 time in 24
    client = sign_in("cat")
    page = client.post("/stop/1/start").text
    attempt, qid = current_question(page)
    values = re.findall(r'name="answer" value="([^"]*)"', page)
    variant = service.variant("cat", qid, attempt)
    if variant.question.type in ("single", "multi"):
        assert values == [label for label, _, _ in variant.choices] == list("abcdefghij"[: len(values)])


def test_the_chapter_is_complete_only_when_all_eight_stops_pass(quiz_server):
    app, sign_in = quiz_server()
    client, service = sign_in("dan"), app.state.service
    for stop in range(1, 8):
        answer_stop(client, service, "dan", stop)
    home = client.get("/").text
    assert "7/8 stops passed" in home and "chapter-complete" not in home
    answer_stop(client, service, "dan", 8)
    home = client.get("/").text
    assert "8/8 stops passed" in home and 'id="chapter-complete"' in home


def test_cooldown_policy_is_stated_and_refuses_an_early_retry(quiz_server):
    app, sign_in = quiz_server(mode="cooldown", cooldown_s=3600)
    client, service = sign_in("ann"), app.state.service
    stop_page = client.get("/stop/3").text
    assert "Attempt policy: Unlimited attempts, 60 min apart after a failed one" in stop_page
    answer_stop(client, service, "ann", 3, wrong={1})
    assert 'id="refusal">The next attempt opens in' in client.get("/stop/3").text
    refused = client.post("/stop/3/start")
    assert refused.status_code == 409 and "A new attempt cannot start: the next attempt opens in" in refused.text
    assert len(service.db.attempts("ann", 3)) == 1


def test_budget_policy_allows_exactly_its_attempts(quiz_server):
    app, sign_in = quiz_server(mode="budget", max_attempts=2)
    client, service = sign_in("bob"), app.state.service
    assert "You have 2 attempt(s) at this stop" in client.get("/stop/4").text
    answer_stop(client, service, "bob", 4, wrong={2})
    answer_stop(client, service, "bob", 4, wrong={2})
    refused = client.post("/stop/4/start")
    assert refused.status_code == 409 and "used all 2 attempts at this stop; ask your TA" in refused.text


def test_dashboard_needs_an_instructor_and_shows_first_try_rates(quiz_server, bank):
    app, sign_in = quiz_server(mode="cooldown")  # every question each attempt: both students see every question
    service = app.state.service
    ann, bob = sign_in("ann"), sign_in("bob")
    answer_stop(ann, service, "ann", 1, wrong={1})
    answer_stop(bob, service, "bob", 1)
    missed = service.db.attempts("ann", 1)[0].question_order[0]
    assert ann.get("/instructor").status_code == 403
    dash = sign_in("prof", "instructor").get("/instructor").text
    # By hand: ann missed `missed` on her first try, bob did not: 1 of 2 = 50%; every other question 2 of 2.
    row = re.search(rf"<td>{re.escape(missed)}</td><td>2</td>\s*<td>(\d+)%</td>", dash)
    assert row and row.group(1) == "50"
    other = next(q.id for q in bank.questions(1) if q.id != missed)
    assert re.search(rf"<td>{re.escape(other)}</td><td>2</td>\s*<td>100%</td>", dash)
    assert "<td>1</td><td>Motivation: from TRPO to PPO</td><td>2</td><td>1</td>" in dash  # started 2, passed 1


def test_gradebook_layouts_from_the_dashboard_and_the_export_command(quiz_server, run_cli, tmp_path):
    app, sign_in = quiz_server()
    service = app.state.service
    answer_stop(sign_in("ann"), service, "ann", 1)
    prof = sign_in("prof", "instructor")
    canvas = list(csv.reader(io.StringIO(prof.get("/instructor/gradebook.canvas").text)))
    assert canvas[0][:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
    assert canvas[0][5:] == [f"PPO quiz stop {s}" for s in range(1, 9)] + ["PPO quiz complete"]
    assert canvas[1][0].strip() == "Points Possible"
    ann = next(r for r in canvas if r[2] == "SIS-ann")
    assert ann[0] == "Student ann" and ann[3] == "ann@uni.example" and ann[5:] == ["100"] + ["0"] * 7 + ["0"]
    out = tmp_path / "moodle.csv"
    code, stdout, stderr = run_cli(["quiz", "export", "--db", tmp_path / "quiz.sqlite", "--format", "moodle", "--out", out])
    assert code == 0, stderr
    moodle = list(csv.reader(io.StringIO(out.read_text())))
    assert moodle[0][:2] == ["ID number", "Email address"] and len(moodle) == 1 + 4
    assert next(r for r in moodle if r[0] == "ann")[2:] == ["100"] + ["0"] * 7 + ["0"]
    code, _, _ = run_cli(["quiz", "export", "--db", tmp_path / "quiz.sqlite", "--format", "csv", "--out", tmp_path / "g.csv"])
    rows = list(csv.DictReader(open(tmp_path / "g.csv")))
    assert code == 0 and {r["student_id"]: r["stop1"] for r in rows} == {"ann": "100", "bob": "0", "cat": "0", "dan": "0"}


@pytest.mark.parametrize(("r", "adv", "objective", "gradient", "flows"), [
    # By hand, eq. 5.1 and 5.9 with ε = 0.2; ∂(r·Â)/∂log π = r·Â.
    (0.9, 1.0, 0.9, 0.9, True),      # Â > 0, r < 1 + ε: the unclipped term is the min
    (1.3, 1.0, 1.2, 0.0, False),     # Â > 0, r ≥ 1 + ε: clipped constant 1.2
    (1.1, -1.0, -1.1, -1.1, True),   # Â < 0, r > 1 − ε
    (0.7, -1.0, -0.8, 0.0, False),   # Â < 0, r ≤ 1 − ε: clipped constant −0.8
])
def test_clip_explorer_api_and_page_show_the_four_cases(quiz_server, r, adv, objective, gradient, flows):
    app, sign_in = quiz_server()
    client = sign_in("ann")
    point = client.get("/api/clip", params={"r": r, "adv": adv, "eps": 0.2}).json()
    assert point["objective"] == pytest.approx(objective) and point["gradient"] == pytest.approx(gradient)
    assert point["flows"] is flows
    page = client.get("/interactive/clip", params={"r": r, "adv": adv}).text
    assert f'id="out-objective">{objective:.4f}<' in page and f'id="out-flows">{"flows" if flows else "zero"}<' in page


def test_the_other_interactives_run_on_the_reference(quiz_server):
    app, sign_in = quiz_server()
    client = sign_in("ann")
    buffer = client.get("/interactive/buffer", params={"actions": "collect,train,purge", "do": "reuse"}).text
    assert "belongs to a purged rollout" in buffer
    # By hand: mean_KL = mean(0.3, 0.1, −0.1, 0.2) = 0.125; R = 2 − 0.05 × 0.125 = 1.99375.
    shown = re.search(r'id="final-reward">([-0-9.]+)<', client.get("/interactive/step").text).group(1)
    assert float(shown) == pytest.approx(1.99375, abs=1e-4)
    step = client.get("/api/step", params={"r_rm": 1.0, "logp": "-1 -1", "ref_logp": "-1.5 -0.5", "values": "0 0"}).json()
    assert step["final_reward"] == pytest.approx(1.0 - 0.05 * 0.0)  # mean KL (0.5 − 0.5)/2 = 0
    danger = client.get("/interactive/danger", params={"parameter": "learning_rate", "value": "1e-4"}).text
    assert "too high" in danger and "catastrophic forgetting" in danger
    assert client.get("/api/clip", params={"r": 9}).status_code == 400
    assert client.get("/api/step", params={"logp": "0.5"}).json()["error"].startswith("log π, log π_ref and V")


def test_server_answers_grade_the_same_offline(quiz_server, bank):
    """What the server stored grades identically through the offline engine (reproducible grading)."""
    from quiz_bank.engine import check, render

    app, sign_in = quiz_server()
    service = app.state.service
    answer_stop(sign_in("cat"), service, "cat", 5, wrong={2, 4})
    stored = service.db.answers("cat", 5, 1)
    for qid, a in stored.items():
        offline = check(render(bank.by_id[qid], service.variant_id("cat"), 1), a.response, service.checker)
        assert offline.correct == a.correct, qid
    assert sum(not a.correct for a in stored.values()) == 2
    assert expected_answer(render(bank.by_id["stop5.kl-sum"], service.variant_id("cat"), 1)) is not None


def test_the_clip_api_returns_the_sweep_and_chart_for_its_own_adv_and_the_buffer_shows_the_ratio_drift(quiz_server):
    """Issue 21 item 14. Hand computation: at r = 0.4, Â = 0.5, ε = 0.2 the objective is
    min(0.4·0.5, 0.8·0.5) = 0.2; after k policy updates of 0.1 nats, r = exp(0.1·k) on data collected before them."""
    import math

    app, sign_in = quiz_server()
    client = sign_in("ann")
    data = client.get("/api/clip", params={"r": 1.1, "adv": 0.5, "eps": 0.2}).json()
    assert data["curve"][0]["r"] == 0.4 and abs(data["curve"][0]["objective"] - 0.2) < 1e-9
    assert data["chart"]["points"].count(",") == len(data["curve"])
    steps = client.get("/api/buffer", params={"actions": "collect,train,train,purge,collect,train"}).json()["steps"]
    assert steps[0]["rollout_ratio"] == 1.0 and steps[3]["rollout_ratio"] is None  # purged: no rollout data
    assert abs(steps[5]["rollout_ratio"] - math.exp(0.1)) < 1e-12  # one update old
    assert abs(steps[5]["replay_ratio"] - math.exp(0.3)) < 1e-12  # the oldest replay data: three updates old
    page = client.get("/interactive/buffer", params={"actions": "collect,train,train,purge,collect,train"}).text
    assert "1.350" in page and "r on oldest replay data" in page
