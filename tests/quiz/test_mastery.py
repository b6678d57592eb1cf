"""The mastery policy (issue 20 item 1): one unseen item per claim, a stop passes on unseen items only,
no verdict during an attempt, the claims missed after it; the same rule on the server and in `quiz take`.

Expected draws and verdicts are worked out by hand from the rule in ``quiz_bank.mastery``'s docstring.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import pytest
from fastapi.testclient import TestClient
from quiz_server_support import SERVER_SECRET, current_question, form_answer

from quiz_bank import mastery
from quiz_bank.instructor.server.auth import TokenSigner
from quiz_bank.instructor.server.policy import AttemptPolicy, PolicyFile


class ClaimedQuestion:
    """A real question of the bank with a ``claim`` (what quizbank's new bank adds to every question)."""

    def __init__(self, question, claim: str) -> None:
        self._q, self.claim = question, claim

    def __getattr__(self, name):
        return getattr(self._q, name)


@dataclass
class FakeStop:
    title: str
    questions: list
    claims: list = field(default_factory=list)


@dataclass
class FakeBank:
    """A one-stop bank whose claims are asked by two fixed questions each (parametric ones alone)."""

    stops: dict

    def questions(self, stop=None):
        return [q for s in ([stop] if stop else sorted(self.stops)) for q in self.stops[s].questions]

    @cached_property
    def by_id(self):
        return {q.id: q for q in self.questions()}


def paired_bank(bank, stop=1) -> FakeBank:
    """Stop ``stop`` of the real bank with its fixed questions paired into claims c0, c1, … and its questions with
    drawn numbers paired into p0, p1, … (a finite draw, a case or a derived option, can repeat a fact already shown:
    tests/quiz/test_quiz_bots.py; a small grid of numbers repeats a variant within a few attempts, red team a136:
    a pair always has an item the last attempt did not show)."""
    from quiz_bank.variants import enumerate_cases

    fixed = [q for q in bank.questions(stop) if not q.is_parametric]
    parametric = [q for q in bank.questions(stop) if q.is_parametric
                  and enumerate_cases(q.parametric.generator, q.parametric.args) is None]
    questions = [ClaimedQuestion(q, f"c{i // 2}") for i, q in enumerate(fixed[: len(fixed) // 2 * 2])]
    questions += [ClaimedQuestion(q, f"p{i // 2}") for i, q in enumerate(parametric[: len(parametric) // 2 * 2])]
    claims = [{"id": f"c{i}", "text": f"claim number {i}", "source": {}} for i in range(len(fixed) // 2)]
    return FakeBank({stop: FakeStop(bank.stops[stop].title, questions, claims)})


def test_the_draw_prefers_unseen_items_and_falls_back_to_the_least_recently_seen(bank):
    fake = paired_bank(bank)
    claims = mastery.stop_claims(fake, 1)
    c0 = next(c for c in claims if c.id == "c0")
    assert len(c0.items) == 2 and c0.text == "claim number 1".replace("1", "0")
    first = mastery.draw(fake, 1, "ann", 1, {})
    assert len(first) == len(claims) and len({mastery.claim_of(fake.by_id[q]) for q in first}) == len(claims)
    seen = mastery.last_seen_from([(1, first)], fake, "ann")
    second = mastery.draw(fake, 1, "ann", 2, seen)
    a, b = c0.items
    shown_first = a if a in first else b
    other = b if shown_first == a else a
    assert other in second and shown_first not in second  # the unseen item of c0
    # Both items of c0 seen (a at attempt 1, b at attempt 2): attempt 3 shows the least recently seen, a's pair first.
    seen3 = mastery.last_seen_from([(1, first), (2, second)], fake, "ann")
    assert shown_first in mastery.draw(fake, 1, "ann", 3, seen3)
    assert c0 in mastery.exhausted_claims(fake, 1, seen3)


def test_the_rule_counts_only_right_answers_on_unseen_items():
    order = ["q1", "q2", "q3"]
    right = {"q1": True, "q2": True, "q3": True}
    assert mastery.attempt_passes(order, right, set())
    assert not mastery.attempt_passes(order, right, {"q2"})  # q2 seen before: elimination could have found it
    assert mastery.attempt_passes(order, right, {"q2"}, count_seen=True)
    assert not mastery.attempt_passes(order, right | {"q3": False}, set())
    assert not mastery.attempt_passes(order, {"q1": True, "q2": True}, set())  # q3 unanswered
    assert not mastery.attempt_passes([], {}, set())


def test_a_question_without_claim_or_level_is_its_own_claim(bank):
    real = bank.questions(1)[0]
    assert mastery.claim_of(real) == real.claim and mastery.level_of(real) == real.level  # the bank lists both
    bare = ClaimedQuestion(real, None)
    bare.level = None
    assert mastery.claim_of(bare) == real.id and mastery.level_of(bare) == "recall"


def solo_bank(bank, stop=1) -> FakeBank:
    """Stop ``stop`` of the real bank with every question its own claim (the bank before claims were listed)."""
    return FakeBank({stop: FakeStop(bank.stops[stop].title, [ClaimedQuestion(q, None) for q in bank.questions(stop)])})


def _client(app, student):
    client = TestClient(app)
    assert client.post("/login", data={"token": TokenSigner(SERVER_SECRET).issue(student)}).status_code == 200
    return client


def _answer_attempt(client, service, student, stop, wrong_qids=(), pages=None):
    """Answer the open attempt (starting it): every question right except ``wrong_qids``; returns the ids shown."""
    page = client.post(f"/stop/{stop}/start")
    assert page.status_code == 200, page.text
    shown = []
    while 'name="question"' in page.text:
        attempt, qid = current_question(page.text)
        shown.append(qid)
        value = form_answer(service, student, qid, attempt, right=qid not in wrong_qids)
        verdict = client.post(f"/stop/{stop}/answer", data={"student": student, "attempt": str(attempt),
                                                             "question": qid, "answer": value})
        assert verdict.status_code == 200
        if pages is not None:
            pages.append(verdict.text)
        page = client.get(f"/stop/{stop}")
    return shown, page.text


def mastery_app(tmp_path, bank, checker, **policy):
    from quiz_bank.instructor.server.app import create_app

    from quiz_server_support import ROSTER

    return create_app(bank, tmp_path / "quiz.sqlite", SERVER_SECRET, roster=ROSTER, checker=checker,
                      policy=PolicyFile(default=AttemptPolicy(mode="mastery", cooldown_s=0, **policy)))


def test_server_a_retry_meets_the_other_item_of_a_missed_claim_and_passes_on_unseen_items(bank, checker, tmp_path):
    fake = paired_bank(bank)
    app = mastery_app(tmp_path, fake, checker)
    service = app.state.service
    client = _client(app, "ann")
    stop_page = client.get("/stop/1").text
    assert "Mastery:" in stop_page and "had not seen before" in stop_page  # the policy stated on the stop page
    c0 = next(c for c in mastery.stop_claims(fake, 1) if c.id == "c0")
    first_order = service.question_order("ann", 1, 1)
    missed_item = next(q for q in c0.items if q in first_order)
    pages: list[str] = []
    shown1, after = _answer_attempt(client, service, "ann", 1, wrong_qids={missed_item}, pages=pages)
    # No verdict during the attempt, and the feedback names the claim and its section, never an option.
    assert all("Answer recorded." in p and "Not right." not in p and ">Right.<" not in p for p in pages)
    assert "claim number 0" in after and c0.cite in after and "1 of" in after
    missed_q = fake.by_id[missed_item]
    assert not any(o.text in after for o in getattr(missed_q, "options", []) or [])
    shown2, after2 = _answer_attempt(client, service, "ann", 1)
    assert missed_item not in shown2 and (set(c0.items) - {missed_item}) <= set(shown2)
    assert "Stop 1 passed" in after2 and service.db.completed_stops("ann") == {1}


def test_server_right_answers_on_seen_items_do_not_pass(bank, checker, tmp_path):
    """One item per claim (each question its own claim): after a failed attempt every fixed claim is exhausted."""
    bank = solo_bank(bank)
    app = mastery_app(tmp_path, bank, checker)
    service = app.state.service
    client = _client(app, "bob")
    order = service.question_order("bob", 1, 1)
    wrong = next(q for q in order if not bank.by_id[q].is_parametric)
    _answer_attempt(client, service, "bob", 1, wrong_qids={wrong})
    _, after = _answer_attempt(client, service, "bob", 1)  # all right, but on questions seen in attempt 1
    assert "Stop 1 passed" not in after and service.db.completed_stops("bob") == set()
    assert 'id="exhausted"' in after
    app2 = mastery_app(tmp_path / "b", bank, checker, count_seen=True)  # the weaker option counts them
    service2 = app2.state.service
    client2 = _client(app2, "bob")
    _answer_attempt(client2, service2, "bob", 1, wrong_qids={wrong})
    _, after = _answer_attempt(client2, service2, "bob", 1)
    assert "Stop 1 passed" in after


def test_the_course_default_is_mastery_and_the_old_policies_stay_available():
    from quiz_bank.instructor.server.policy import load_policy

    course = load_policy()
    assert course.default.mode == "mastery" and not course.default.shows_verdicts
    assert AttemptPolicy(mode="cooldown").shows_verdicts and AttemptPolicy(mode="budget").shows_verdicts
    assert not AttemptPolicy(mode="cooldown", per_answer_feedback=False).shows_verdicts


def test_take_under_mastery_gives_no_verdict_and_keeps_a_passed_stop(bank, key_of, run_cli, tmp_path):
    """`quiz take` runs the same rule; a passed stop stays passed and a new attempt needs --new-attempt."""
    from test_take import typed

    from quiz_bank.storage import AttemptStore

    store, policy = tmp_path / "quiz.sqlite3", tmp_path / "policy.yaml"
    policy.write_text("default: {mode: mastery, cooldown_s: 0}\n")
    key = key_of("tess")
    drawn1 = set(mastery.draw(bank, 1, "tess", 1, {}))  # what `quiz take` asks: one per claim, in bank order
    order1 = [q.id for q in bank.questions(1) if q.id in drawn1]
    stdin = "".join(typed(bank.by_id[q], "tess", 1, key["answers"][q], bank) + "\n" for q in order1)
    code, out, err = run_cli(["quiz", "take", "--stop", 1, "--student", "tess", "--store", store, "--policy", policy], stdin)
    assert code == 0, err
    assert "Recorded." in out and "Not right." not in out and "Right." not in out.replace("Recorded.", "")
    assert "Stop 1 passed" in out
    code, out, _ = run_cli(["quiz", "take", "--stop", 1, "--student", "tess", "--store", store, "--policy", policy], "a\n")
    assert code == 0 and "already passed (it stays passed)" in out and "--new-attempt" in out
    with AttemptStore(store) as s:
        assert max(a.attempt for a in s.attempts("tess")) == 1  # nothing new was opened
    # A practice attempt with every answer wrong: the stop stays passed.
    from quiz_server_support import form_answer, offline_service

    service = offline_service(bank, secret=None)  # quiz take: keyless variants
    drawn2 = set(mastery.draw(bank, 1, "tess", 2, mastery.last_seen_from([(1, order1)], bank, "tess")))
    wrong = [form_answer(service, "tess", q.id, 2, right=False) for q in bank.questions(1) if q.id in drawn2]
    stdin = "".join((",".join(w) if isinstance(w, list) else w) + "\n" for w in wrong) + "n\n"
    code, out, _ = run_cli(["quiz", "take", "--stop", 1, "--new-attempt", "--student", "tess", "--store", store,
                            "--policy", policy], stdin)
    assert "stays passed (this was a practice attempt)" in out
    code, out, _ = run_cli(["quiz", "status", "--student", "tess", "--store", store])
    assert "chapter complete: no (1/8 stops passed)" in out
    with AttemptStore(store) as s:
        assert s.completed_stops("tess") == {1}


def test_take_counts_the_missed_claims_out_of_the_stops_claims_not_its_questions(bank, run_cli, tmp_path):
    """Stop 2 asks more questions than it has claims (a claim's items are added until a blind pass is unlikely):
    with every answer wrong, every claim is missed, and the count is out of the claims."""
    from quiz_server_support import form_answer, offline_service

    store, policy = tmp_path / "quiz.sqlite3", tmp_path / "policy.yaml"
    policy.write_text("default: {mode: mastery, cooldown_s: 0}\n")
    service = offline_service(bank, secret=None)
    drawn = set(mastery.draw(bank, 2, "uma", 1, {}))
    wrong = [form_answer(service, "uma", q.id, 1, right=False) for q in bank.questions(2) if q.id in drawn]
    n_claims = len({q.claim for q in bank.questions(2)})  # the bank's own listing: 5 claims for stop 2
    assert len(wrong) > n_claims, "stop 2 no longer asks more questions than claims: the check would be vacuous"
    stdin = "".join((",".join(w) if isinstance(w, list) else w) + "\n" for w in wrong) + "n\n"
    code, out, _ = run_cli(["quiz", "take", "--stop", 2, "--student", "uma", "--store", store, "--policy", policy], stdin)
    assert f"{n_claims} of {n_claims} claims not established" in " ".join(out.split()), out


@pytest.mark.parametrize("mode", ["cooldown", "budget"])
def test_the_older_policies_still_tell_each_answer(bank, checker, tmp_path, mode):
    from quiz_bank.instructor.server.app import create_app

    from quiz_server_support import ROSTER

    app = create_app(bank, tmp_path / "quiz.sqlite", SERVER_SECRET, roster=ROSTER, checker=checker,
                     policy=PolicyFile(default=AttemptPolicy(mode=mode, cooldown_s=0)))
    client = _client(app, "cat")
    pages: list[str] = []
    _answer_attempt(client, app.state.service, "cat", 1, pages=pages)
    assert all("Right." in p for p in pages) and len(pages) == len(bank.questions(1))
