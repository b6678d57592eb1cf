"""The Gradescope bundle grades the quiz too: keys inside the autograder zip, one test per stop, no key in feedback."""

from __future__ import annotations

import json
import zipfile

from grader.platforms.gradescope.quiz import add_quiz_results
from grader.platforms.gradescope.run import BundleConfig


def test_a_responses_file_in_the_submission_is_graded_per_stop(bank, key_of, tmp_path):
    key = key_of("gail")
    answers = {q.id: key["answers"][q.id] for q in bank.questions(1) + bank.questions(2)}
    missed = bank.questions(2)[0]
    answers[missed.id] = None  # unanswered: stop 2 fails
    submission = tmp_path / "submission" / "ppo-ch5-student"
    submission.mkdir(parents=True)
    (submission / "quiz_responses_gail.json").write_text(json.dumps({"student_id": "gail", "attempt": 1, "answers": answers}))
    results = add_quiz_results({"score": 5.0, "tests": [{"name": "ex1", "score": 5.0, "max_score": 5.0}],
                                "extra_data": {"max_score": 80.0}}, tmp_path / "submission", metadata_path=None)
    quiz = [t for t in results["tests"] if "quiz" in t.get("tags", [])]
    assert [t["score"] for t in quiz] == [1.0, 0.0] + [0.0] * 6
    assert missed.source.cite() in quiz[1]["output"] and "passes only at 100%" in quiz[1]["output"]
    assert missed.id not in quiz[1]["output"]  # which question was wrong is not told (it told which to flip)
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


def test_a139_two_submissions_differing_in_one_answer_get_the_same_feedback(bank, key_of, tmp_path):
    """Red team a139: the Gradescope quiz grades every question of a stop (no unseen-item rule), so any
    per-question signal is an oracle across resubmissions. The output said "37/39 right" and listed the
    sections of the wrong questions only: flipping one fixed answer between two submissions and reading the
    count (or a section appearing or going) told whether the new answer was right, question by question
    (elimination). A stop not passed now reads the same whatever is wrong: no count, every section of the stop."""
    key = key_of("gail")
    fixed = [q for q in bank.questions(1) if not q.is_parametric]
    cites = {}
    for q in fixed:
        cites.setdefault(q.source.cite(), q)
    first, second = list(cites.values())[:2] if len(cites) > 1 else fixed[:2]
    outputs = []
    for wrong in ({first.id, second.id}, {first.id}):
        answers = {q.id: key["answers"][q.id] for q in bank.questions()}
        for qid in wrong:
            answers[qid] = None  # unanswered: wrong
        folder = tmp_path / f"sub{len(wrong)}"
        folder.mkdir()
        (folder / "quiz_responses_gail.json").write_text(json.dumps({"student_id": "gail", "attempt": 1,
                                                                     "answers": answers}))
        results = add_quiz_results({"tests": []}, folder, metadata_path=None)
        stop1 = next(t for t in results["tests"] if "stop1" in t["tags"])
        assert stop1["score"] == 0.0
        outputs.append(stop1["output"])
    assert outputs[0] == outputs[1], outputs
    assert "right" not in outputs[0].split("—")[0] and first.source.cite() in outputs[0]
