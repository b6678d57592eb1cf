"""The Gradescope bundle grades the quiz too: keys inside the autograder zip, one test per stop, no key in feedback."""

from __future__ import annotations

import json
import zipfile

from grader.gradescope.quiz import add_quiz_results
from grader.gradescope.run import BundleConfig


def test_a_responses_file_in_the_submission_is_graded_per_stop(bank, key_of, tmp_path):
    key = key_of("gail")
    answers = {q.id: key["answers"][q.id] for q in bank.questions(1) + bank.questions(2)}
    missed = bank.questions(2)[0]
    answers[missed.id] = None  # unanswered: stop 2 fails
    submission = tmp_path / "submission" / "ppo-ch5-student"
    submission.mkdir(parents=True)
    (submission / "quiz_responses_gail.json").write_text(json.dumps({"student_id": "gail", "attempt": 1, "answers": answers}))
    results = add_quiz_results({"score": 5.0, "tests": [{"name": "ex1", "score": 5.0, "max_score": 5.0}],
                                "extra_data": {"max_score": 80.0}}, tmp_path / "submission")
    quiz = [t for t in results["tests"] if "quiz" in t.get("tags", [])]
    assert [t["score"] for t in quiz] == [1.0, 0.0] + [0.0] * 6
    assert missed.id in quiz[1]["output"] and "passes only at 100%" in quiz[1]["output"]
    assert results["score"] == 6.0 and results["extra_data"]["max_score"] == 88.0
    assert results["extra_data"]["quiz"] == {"graded": True, "problem": None, "stops_passed": 1, "complete": False}
    explanations = [q.explanation for q in bank.questions() if q.explanation]
    assert not any(e[:40] in t["output"] for t in quiz for e in explanations)


def test_no_responses_file_scores_zero_with_a_message(tmp_path):
    (tmp_path / "ex1_ratio.py").write_text("x = 1\n")
    results = add_quiz_results({"tests": []}, tmp_path)
    assert all(t["score"] == 0 for t in results["tests"]) and len(results["tests"]) == 8
    assert "no quiz responses file" in results["tests"][0]["output"]


def test_the_bundle_with_quiz_carries_the_keys_and_the_switch(tmp_path):
    from grader.commands.gradescope_bundle import build_bundle

    path = build_bundle(tmp_path / "autograder.zip", profile="fast", quiz=True)
    with zipfile.ZipFile(path) as zf:
        names = set(zf.namelist())
        config = BundleConfig.model_validate_json(zf.read("gradescope_config.json"))
    assert config.quiz is True and "quiz_bank/keys.py" in names and "quiz_bank/stop1.yaml" in names
