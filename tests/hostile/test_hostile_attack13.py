"""Red team attack13: what a student could still do, each test failing before its fix.

* a02: a symbolic quiz answer that is undefined at every probe point (``0/0``, ``a/0``, ``0*log(0)``)
  was judged equivalent to any key: ``abs(want - got) > tol`` is False for NaN, so every probe
  "agreed", and the fallback accepted "equal at 6 probe points". Over HTTP, every symbolic question of
  the quiz (8 in the bank) was recorded right without knowing its answer.
* a05: one student held the quiz server's one symbolic checker (a lock shared by every student) with
  answers such as ``Min(0, exp(exp(exp(exp(a)*b)))-a)``, whose 30-digit evaluation runs for minutes: each
  was killed at 5 s (the next check of anyone got a further 10 s grace), reported undecided and not
  recorded, so it could be posted again and again, even to an attempt that was over. Three such posts
  kept another student's answer waiting 40 s.
* a06: on Gradescope a responses file could answer as any of the submitter's names (SID, e-mail, its local
  part, Gradescope's id), and the offline quiz draws an attempt and its "seen before" history from that name:
  answering as another name gave a fresh draw with nothing seen, so a question an earlier submission had told
  about was asked again and counted (a stop passed on it).
* a07: ``quiz grade-batch`` merged every file naming a student, "a later file wins a tie": a classmate's file
  naming alice with no answers, in a folder sorted after hers, turned her complete quiz into 0 / 48, silently.
"""

from __future__ import annotations

import re

import pytest

from quiz_bank.symbolic import decide

#: Expressions with no value at the probe points (sympy: nan or zoo): each must be judged different.
UNDEFINED = ["0/0", "p/0", "0*log(0)", "(p-p)/(p-p)", "p/q + 0/0", "log(0)", "log(p-p)*0"]


@pytest.mark.parametrize("given", UNDEFINED)
@pytest.mark.parametrize("key", ["p/q", "0", "p*q + 1"])
def test_an_undefined_expression_is_not_equivalent_to_a_key(key, given):
    """A response undefined at a probe point where the key is defined is 'different', never 'equivalent'."""
    verdict = decide(key, given, ["p", "q"])
    assert verdict.status == "different", (key, given, verdict)


@pytest.mark.parametrize(("key", "given"), [("p/q", "1/(q/p)"), ("exp(a - b)", "exp(a-b)"), ("0", "g*A - A*g"),
                                             ("log(p) - log(q)", "log(p/q)")])
def test_equivalent_forms_still_pass(key, given):
    """The fix leaves honest equivalent forms equivalent (by hand: p/q = 1/(q/p); log p − log q = log(p/q) for
    positive p, q, the probe points' domain)."""
    names = sorted({n for n in re.findall(r"[A-Za-z]+", key + " " + given) if n not in ("exp", "log")})
    assert decide(key, given, names).status == "equivalent"


def test_the_quiz_server_does_not_mark_0_over_0_right(tmp_path):
    """Over HTTP, as a student: '0/0' posted to a symbolic question is recorded wrong (a policy that shows verdicts)."""
    from fastapi.testclient import TestClient

    from quiz_bank.instructor.server.app import create_app
    from quiz_bank.instructor.server.auth import TokenSigner
    from quiz_bank.instructor.server.policy import AttemptPolicy, PolicyFile
    from quiz_bank.loader import load_bank
    from quiz_bank.symbolic import SymbolicChecker

    secret = b"attack13-quiz-secret-" * 3
    bank = load_bank()
    with SymbolicChecker() as checker:
        app = create_app(bank, tmp_path / "quiz.sqlite", secret, roster=[{"student_id": "mallory"}], checker=checker,
                         policy=PolicyFile(default=AttemptPolicy(mode="cooldown", cooldown_s=0)))
        client = TestClient(app)
        assert client.post("/login", data={"token": TokenSigner(secret).issue("mallory")}).status_code == 200
        service = app.state.service
        stop = 6  # its symbolic question: stop6.log-space-ratio, key exp(a - b)
        assert client.post(f"/stop/{stop}/start").status_code == 200
        attempt = service.open_attempt("mallory", stop)
        symbolic = [q for q in attempt.question_order if bank.by_id[q].type == "symbolic"]
        assert symbolic, "stop 6 has a symbolic question"
        while (nxt := service.next_question(attempt)) is not None:
            number, variant = nxt
            q = variant.question
            answer = "0/0" if q.type == "symbolic" else _parseable(variant)
            response = client.post(f"/stop/{stop}/answer",
                                   data={"attempt": attempt.attempt, "question": q.id, "answer": answer})
            assert response.status_code == 200, response.text[:500]
        stored = service.db.answers("mallory", stop, attempt.attempt)
        assert [stored[q].correct for q in symbolic] == [False] * len(symbolic)


def _parseable(variant) -> str:
    """Any answer the server can read for a non-symbolic question (its verdict does not matter here)."""
    q = variant.question
    if q.type in ("single", "multi"):
        return variant.choices[0][0]
    if q.type == "ordering":
        return " ".join(label for label, _, _ in variant.choices)
    if q.type == "true_false":
        return "true"
    return "123456"


#: A well-formed response whose 30-digit value sympy computes for minutes (a tower of exponentials).
TOWER = "Min(0, exp(exp(exp(exp(a)*b)))-a)"


def test_a_tower_of_exponentials_is_decided_within_the_checkers_limit():
    """The checker decides it (different: its value is beyond a double's range at the probe points) instead of
    running into its 5 s limit ('undecided', the worker killed)."""
    from quiz_bank.symbolic import SymbolicChecker

    with SymbolicChecker(timeout_s=5.0) as checker:
        assert checker.check("a", "a", ["a", "b"]).status == "equivalent"  # started and warm
        assert checker.check("exp(a - b)", TOWER, ["a", "b"]).status == "different"
        assert checker.check("0", TOWER.replace("a", "g").replace("b", "A"), ["g", "A"]).status == "different"


class _CountingChecker:
    """A stand-in for the symbolic checker that counts its checks (every response is equivalent)."""

    def __init__(self) -> None:
        self.calls = 0

    def check(self, expected, given, symbols):
        from quiz_bank.symbolic import Verdict

        self.calls += 1
        return Verdict("equivalent", "stand-in")


def test_an_answer_that_cannot_be_recorded_is_never_checked(tmp_path):
    """Over HTTP: answers to an attempt that is over, or to a question already answered, are refused (409) before
    the shared checker sees them."""
    from fastapi.testclient import TestClient

    from quiz_bank.instructor.server.app import create_app
    from quiz_bank.instructor.server.auth import TokenSigner
    from quiz_bank.instructor.server.policy import AttemptPolicy, PolicyFile
    from quiz_bank.loader import load_bank

    secret = b"attack13-quiz-secret-" * 3
    bank = load_bank()
    checker = _CountingChecker()
    app = create_app(bank, tmp_path / "quiz.sqlite", secret, roster=[{"student_id": "mallory"}], checker=checker,
                     policy=PolicyFile(default=AttemptPolicy(mode="cooldown", cooldown_s=0)))
    client = TestClient(app)
    assert client.post("/login", data={"token": TokenSigner(secret).issue("mallory")}).status_code == 200
    service, stop = app.state.service, 6
    client.post(f"/stop/{stop}/start")
    attempt = service.open_attempt("mallory", stop)
    symbolic = next(q for q in attempt.question_order if bank.by_id[q].type == "symbolic")
    while (nxt := service.next_question(attempt)) is not None:
        variant = nxt[1]
        answer = "a" if variant.question.type == "symbolic" else _parseable(variant)
        client.post(f"/stop/{stop}/answer", data={"attempt": attempt.attempt, "question": variant.question.id,
                                                  "answer": answer})
    assert service.open_attempt("mallory", stop) is None and checker.calls == 1  # over; its one symbolic answer
    for _ in range(3):
        response = client.post(f"/stop/{stop}/answer",
                               data={"attempt": attempt.attempt, "question": symbolic, "answer": TOWER})
        assert response.status_code == 409
    assert checker.calls == 1


def test_gradescope_quiz_answers_count_under_one_id_per_student(tmp_path):
    """Submission 1 answers as the SID; submission 2 answers as the e-mail's local part, right on its own draw,
    which asks a question submission 1 showed: it is refused with the id to use, and no stop passes on it."""
    import json

    from grader.platforms.gradescope.quiz import add_quiz_results
    from quiz_bank import offline
    from quiz_bank.grading import answer_key
    from quiz_bank.loader import load_bank

    bank = load_bank()
    user = {"sid": "s123", "email": "alice@uni.example", "name": "Alice", "id": 777}

    def submit(previous: list, as_id: str, answers: dict) -> dict:
        folder = tmp_path / f"submission{len(list(tmp_path.iterdir()))}"
        folder.mkdir()
        meta = folder / "submission_metadata.json"
        meta.write_text(json.dumps({"users": [user], "previous_submissions": [{"results": r} for r in previous]}))
        (folder / "quiz.json").write_text(json.dumps({"student_id": as_id, "attempt": len(previous) + 1,
                                                      "answers": answers}))
        return add_quiz_results({"tests": []}, folder, meta)

    first = offline.attempt_at(bank, 2, "s123", 1)
    one = submit([], "s123", {q: "zzz" for q in first.order})
    assert one["extra_data"]["quiz"]["passed_stops"] == []
    second = offline.attempt_at(bank, 2, "alice", 2)
    assert set(second.order) & set(first.order) - set(second.stale), "the alias' draw re-asks a told question"
    key = answer_key(bank, "alice", 2)["answers"]
    two = submit([one], "alice", {q: key[q] for q in second.order})
    assert two["extra_data"]["quiz"]["passed_stops"] == []
    assert "your quiz id on Gradescope is 's123'" in two["extra_data"]["quiz"]["problem"]
    # The SID itself, on its own attempt-2 draw, is graded as before.
    key = answer_key(bank, "s123", 2)["answers"]
    own = submit([one], "s123", {q: key[q] for q in offline.attempt_at(bank, 2, "s123", 2).order})
    assert own["extra_data"]["quiz"]["problem"] is None


def test_quiz_grade_batch_never_lets_one_file_replace_anothers_answers(tmp_path):
    """alice/ holds alice's right answers; zed/ a file naming alice, answering nothing (sorted after hers). The batch
    rejects alice's row naming both files instead of grading her 0; a student's own two attempts still grade."""
    import csv
    import json

    from ppo_course.cli import main
    from quiz_bank.grading import answer_key
    from quiz_bank.loader import load_bank

    bank = load_bank()
    key = answer_key(bank, "alice", 1)
    cohort = tmp_path / "cohort"
    for folder, data in (("alice", key), ("zed", {"student_id": "alice", "attempt": 1,
                                                  "answers": {q: None for q in key["answers"]}})):
        (cohort / folder).mkdir(parents=True)
        (cohort / folder / "quiz_responses.json").write_text(json.dumps(data))
    out = tmp_path / "gradebook.csv"
    assert main(["quiz", "grade-batch", str(cohort), "--out", str(out)]) == 0
    rows = {r["student_id"]: r for r in csv.DictReader(out.open(encoding="utf-8"))}
    assert rows["alice"]["status"] == "rejected" and rows["alice"]["total"] == ""
    assert "zed/quiz_responses.json" in rows["alice"]["message"] and "attempt 1" in rows["alice"]["message"]
    (cohort / "zed" / "quiz_responses.json").write_text(json.dumps(answer_key(bank, "alice", 2)))  # attempt 2
    assert main(["quiz", "grade-batch", str(cohort), "--out", str(out)]) == 0
    rows = {r["student_id"]: r for r in csv.DictReader(out.open(encoding="utf-8"))}
    assert rows["alice"]["status"] == "graded" and rows["alice"]["complete"] == "True"
