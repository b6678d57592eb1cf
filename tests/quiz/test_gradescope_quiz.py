"""The Gradescope bundle grades the quiz too: keys inside the autograder zip, one test per stop, no key in feedback."""

from __future__ import annotations

import json
import zipfile

from grader.platforms.gradescope.quiz import add_quiz_results
from grader.platforms.gradescope.run import BundleConfig


def _asked(bank, student, attempt, stop):
    from quiz_bank.offline import attempt_at

    return [bank.by_id[qid] for qid in attempt_at(bank, stop, student, attempt).order]


def test_a_responses_file_in_the_submission_is_graded_per_stop(bank, key_of, tmp_path):
    key = key_of("gail")
    answers = {q.id: key["answers"][q.id] for q in bank.questions(1) + bank.questions(2)}
    missed = _asked(bank, "gail", 1, 2)[0]
    answers[missed.id] = None  # unanswered: stop 2 fails
    submission = tmp_path / "submission" / "ppo-ch5-student"
    submission.mkdir(parents=True)
    (submission / "quiz_responses_gail.json").write_text(json.dumps({"student_id": "gail", "attempt": 1, "answers": answers}))
    results = add_quiz_results({"score": 5.0, "tests": [{"name": "ex1", "score": 5.0, "max_score": 5.0}],
                                "extra_data": {"max_score": 80.0}}, tmp_path / "submission", metadata_path=None)
    quiz = [t for t in results["tests"] if "quiz" in t.get("tags", [])]
    assert [t["score"] for t in quiz] == [1.0, 0.0] + [0.0] * 6
    claim = next(c for c in bank.claims() if c.id == missed.claim)
    assert f"Claims to reread: {claim.text} ({missed.source.cite()})" in quiz[1]["output"]
    assert "every claim is answered right, on questions not seen before" in quiz[1]["output"]
    assert missed.id not in quiz[1]["output"]  # the claim, as on the web quiz; never the question or its key
    assert results["score"] == 6.0 and results["extra_data"]["max_score"] == 88.0
    assert results["extra_data"]["quiz"] == {"graded": True, "problem": None, "stops_passed": 1, "complete": False,
                                             "passed_stops": [1]}
    explanations = [q.explanation for q in bank.questions() if q.explanation]
    assert not any(e[:40] in t["output"] for t in quiz for e in explanations)


def test_no_responses_file_scores_zero_with_a_message(tmp_path):
    (tmp_path / "ex1_ratio.py").write_text("x = 1\n")
    results = add_quiz_results({"tests": []}, tmp_path, metadata_path=None)
    assert all(t["score"] == 0 for t in results["tests"]) and len(results["tests"]) == 8
    assert "no quiz responses file" in results["tests"][0]["output"]


def test_the_bundle_with_quiz_carries_the_keys_and_the_switch(tmp_path):
    from grader.commands.gradescope_bundle import build_bundle

    path = build_bundle(tmp_path / "autograder.zip", profile="fast", quiz=True)
    with zipfile.ZipFile(path) as zf:
        names = set(zf.namelist())
        config = BundleConfig.model_validate_json(zf.read("gradescope_config.json"))
    assert config.quiz is True and "quiz_bank/instructor/keys.py" in names and "quiz_bank/stop1.yaml" in names


def _submit(tmp_path, name, data, metadata):
    submission = tmp_path / name / "submission"
    submission.mkdir(parents=True)
    (submission / "quiz_responses.json").write_text(json.dumps(data))
    meta = tmp_path / name / "submission_metadata.json"
    meta.write_text(json.dumps(metadata))
    return add_quiz_results({"tests": []}, submission, metadata_path=meta)


def _metadata(email, previous=()):
    return {"users": [{"email": email, "name": "X", "sid": None}],
            "previous_submissions": [{"results": r} for r in previous]}


def test_a_classmates_file_scores_zero_with_the_reason(bank, key_of, tmp_path):
    """Issue 20 item 6: a passing file handed in by someone else counts for no one."""
    key = key_of("gail")
    results = _submit(tmp_path, "theft", {"student_id": "gail", "attempt": 1, "answers": key["answers"]},
                      _metadata("hank@uni.example"))
    quiz = [t for t in results["tests"] if "quiz" in t["tags"]]
    assert [t["score"] for t in quiz] == [0.0] * 8
    assert "is 'gail''s, but it was handed in by" in quiz[0]["output"] and results["extra_data"]["quiz"]["graded"] is False
    own = _submit(tmp_path, "own", {"student_id": "gail", "attempt": 1, "answers": key["answers"]},
                  _metadata("gail@uni.example"))
    assert [t["score"] for t in own["tests"]] == [1.0] * 8


def test_the_attempt_is_the_graders_count_and_a_passed_stop_stays_passed(bank, key_of, tmp_path):
    key1 = key_of("gail", 1)
    first = _submit(tmp_path, "s1", {"student_id": "gail", "attempt": 1, "answers": key1["answers"]},
                    _metadata("gail@uni.example"))
    assert first["extra_data"]["quiz"]["passed_stops"] == list(range(1, 9))
    # Resubmitting the same attempt-1 file as the second submission: graded as attempt 2, refused with the reason.
    again = _submit(tmp_path, "s2", {"student_id": "gail", "attempt": 1, "answers": key1["answers"]},
                    _metadata("gail@uni.example", previous=[{"extra_data": {"quiz": {"passed_stops": [1, 2]}}}]))
    quiz = [t for t in again["tests"] if "quiz" in t["tags"]]
    assert "graded as attempt 2" in quiz[2]["output"] and "quiz take --attempt 2" in quiz[2]["output"]
    assert [t["score"] for t in quiz] == [1.0, 1.0] + [0.0] * 6  # stops 1 and 2 were passed before: kept
    assert again["extra_data"]["quiz"]["graded_as_attempt"] == 2


def test_a_wrong_answers_feedback_never_states_the_explanation(bank, key_of, tmp_path):
    from quiz_bank.grading import grade
    from quiz_bank.models import Responses

    key = key_of("ivy")
    wrong = {q.id: None for q in bank.questions()}
    for q in bank.questions():
        if q.type == "true_false" and not q.is_parametric:
            wrong[q.id] = not key["answers"][q.id]
    report = grade(bank, [Responses(student_id="ivy", attempt=1, answers=wrong)]).to_json()
    feedback = [x["feedback"] for s in report["stops"].values() for x in s["questions"] if x["status"] == "wrong"]
    assert feedback and all(f.startswith("Not right. Reread Book §") for f in feedback)
    explanations = [q.explanation[:40] for q in bank.questions() if q.explanation]
    assert not any(e in f for f in feedback for e in explanations)


def test_a139_a_verdict_told_after_one_submission_never_counts_in_the_next(bank, key_of, tmp_path):
    """Red team a139: when every submission graded every question, any per-question signal (a count, the sections
    of the wrong ones) told, over resubmissions, whether a flipped answer was right. Each Gradescope submission is
    now an attempt of the web quiz's rule: the claims missed are told (as on the quiz server), and the next
    submission asks the stop on its own draw, where the question told about is either not asked or stale (a
    right answer on it does not count)."""
    from quiz_bank.offline import attempt_at

    first = _asked(bank, "gail", 1, 1)
    wrong = first[0]
    answers = {q.id: key_of("gail")["answers"][q.id] for q in bank.questions()}
    answers[wrong.id] = None
    one = _submit(tmp_path, "s1", {"student_id": "gail", "attempt": 1, "answers": answers}, _metadata("gail@uni.example"))
    stop1 = next(t for t in one["tests"] if "stop1" in t["tags"])
    assert stop1["score"] == 0.0 and wrong.id not in stop1["output"]
    second = attempt_at(bank, 1, "gail", 2)
    assert wrong.id not in second.order or wrong.id in second.stale
    # The second submission answers attempt 2's draw right, and attempt 1's missed question right too: stop 1
    # passes on attempt 2's own unseen questions, never on the one told about.
    answers2 = {q.id: key_of("gail", 2)["answers"][q.id] for q in bank.questions()}
    two = _submit(tmp_path, "s2", {"student_id": "gail", "attempt": 2, "answers": answers2},
                  _metadata("gail@uni.example", previous=[one]))
    graded = {o for o in second.order}
    assert next(t for t in two["tests"] if "stop1" in t["tags"])["score"] == (0.0 if second.stale & graded else 1.0)
