"""Grading: keys score 100%, the 100% rule, unknown ids, malformed files, batches, exercises."""

from __future__ import annotations

import copy
import csv
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from quiz_bank.engine import ResponsesError, check, render
from quiz_bank.grading import Report, grade, load_responses
from quiz_bank.models import Responses


def wrong_answer(question, key):
    """A well-formed response that differs from ``key`` (one per question type)."""
    kind = question.type
    if kind == "single":
        return next(o.id for o in question.options if o.id != key)
    if kind == "multi":
        return sorted(set(key) ^ {question.options[0].id})
    if kind == "true_false":
        return not key
    if kind == "numeric":
        tol = max(question.tolerance.abs, question.tolerance.rel * abs(key))
        return key + 10 * tol + 1.0
    if kind == "symbolic":
        return f"({key}) + 1"
    if kind == "ordering":
        return [key[1], key[0], *key[2:]]
    raise AssertionError(kind)


def asked(bank, key: dict, checker) -> dict[int, list[str]]:
    """{stop: the question ids the key's attempt asks} (read off a graded report: the mastery draw)."""
    report = grade(bank, [Responses.model_validate(key)], checker=checker)
    return {stop: [o.question_id for o in outcomes] for stop, outcomes in report.stops.items()}


def test_key_graded_for_the_same_student_is_complete_via_cli(bank, run_cli, tmp_path):
    key_path, report_path = tmp_path / "key.json", tmp_path / "report.json"
    code, _, err = run_cli(["quiz", "key", "--student", "alice", "--out", key_path])
    assert code == 0, err
    code, out, err = run_cli(["quiz", "grade", key_path, "--out", report_path])
    assert code == 0, err
    report = json.loads(report_path.read_text())
    assert report["complete"] is True
    # The mastery draw: each stop asks every claim at least once, and far fewer than all its questions.
    claims = {c.stop: 0 for c in bank.claims()}
    for c in bank.claims():
        claims[c.stop] += 1
    assert report["score"] == report["max_score"] < len(bank.questions()) // 3
    assert all(s["passed"] and s["score"] == s["max_score"] >= claims[int(name[4:])] and not s["claims_missed"]
               for name, s in report["stops"].items())
    assert "chapter complete: yes" in out


@pytest.mark.parametrize("student, attempt", [("bob", 1), ("carol-ü", 3)])
def test_key_of_any_attempt_scores_100_percent(bank, key_of, checker, student, attempt):
    report = grade(bank, [Responses.model_validate(key_of(student, attempt))], checker=checker)
    assert report.complete
    assert all(report.stop_passed(s) for s in range(1, 9))


def test_key_of_another_student_fails_parametric_questions(bank, key_of, checker):
    """Variants are per student: alice's key is not bob's (the parametric answers differ)."""
    alice = key_of("alice")
    report = grade(bank, [Responses.model_validate({**alice, "student_id": "bob"})], checker=checker)
    wrong = {o.question_id for outcomes in report.stops.values() for o in outcomes if not o.correct}
    assert wrong and wrong <= {q.id for q in bank.questions() if q.is_parametric}
    assert not report.complete


def test_every_wrong_answer_is_marked_wrong_with_the_reference_and_never_the_explanation(bank, key_of, checker):
    """Issue 20 item 6: the explanation states the key, so a failed answer's feedback cites the section only."""
    key = key_of("dave")["answers"]
    for q in bank.questions():
        outcome = check(render(q, "dave", 1), wrong_answer(q, key[q.id]), checker)
        assert outcome.status == "wrong", (q.id, outcome)
        assert f"Book {q.source.section}" in outcome.feedback and q.source.page in outcome.feedback
        assert not q.explanation or q.explanation not in outcome.feedback


@given(question_index=st.integers(min_value=0, max_value=10_000))
@settings(max_examples=10, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_single_wrong_answer_fails_its_stop_and_the_chapter(bank, key_of, checker, question_index):
    shown = [qid for ids in asked(bank, key_of("erin"), checker).values() for qid in ids]
    question = bank.by_id[shown[question_index % len(shown)]]
    responses = copy.deepcopy(key_of("erin"))
    responses["answers"][question.id] = wrong_answer(question, responses["answers"][question.id])
    report = grade(bank, [Responses.model_validate(responses)], checker=checker)
    assert not report.stop_passed(question.stop)
    assert all(report.stop_passed(s) for s in range(1, 9) if s != question.stop)
    assert report.complete is False
    data = report.to_json()
    stop = data["stops"][f"stop{question.stop}"]
    assert stop["score"] == stop["max_score"] - 1
    assert [c["claim"] for c in stop["claims_missed"]] == [next(c.text for c in bank.claims() if c.id == question.claim)]
    # An answer to a question the attempt did not ask changes nothing.
    unasked = next(q for q in bank.questions(question.stop) if q.id not in shown)
    other = copy.deepcopy(key_of("erin"))
    other["answers"][unasked.id] = None
    assert grade(bank, [Responses.model_validate(other)], checker=checker).complete


def test_missing_and_unparseable_answers_fail_but_are_not_called_wrong(bank, key_of, checker):
    responses = copy.deepcopy(key_of("frank"))
    shown = asked(bank, responses, checker)
    missing, garbled = shown[3][0], shown[2][0]
    del responses["answers"][missing]
    responses["answers"][garbled] = "zero point two"
    report = grade(bank, [Responses.model_validate(responses)], checker=checker)
    status = {o.question_id: o for outcomes in report.stops.values() for o in outcomes}
    assert status[missing].status == "unanswered"
    assert status[garbled].status == "unparseable"
    assert "Could not read your answer" in status[garbled].feedback
    assert not report.stop_passed(2) and not report.stop_passed(3) and not report.complete


def test_unknown_question_ids_are_reported(run_cli, key_of, tmp_path, write_json):
    responses = copy.deepcopy(key_of("gina"))
    responses["answers"]["stop9.bogus"] = "a"
    responses["answers"]["stop2.no-such-question"] = 1
    path = write_json(tmp_path / "r.json", responses)
    code, _, err = run_cli(["quiz", "grade", path, "--out", tmp_path / "report.json"])
    assert code == 0
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["unknown_question_ids"] == ["stop2.no-such-question", "stop9.bogus"]
    assert "stop9.bogus" in err and "unknown question ids" in err


@pytest.mark.parametrize(
    "content, fragment",
    [
        ("{not json", "not valid JSON (line 1"),
        ("[1, 2]", "expected a JSON object"),
        ('{"attempt": 1, "answers": {}}', "student_id: Field required"),
        ('{"student_id": "x", "answers": []}', "answers: Input should be a valid dictionary"),
        ('{"student_id": "x", "attempt": 0, "answers": {}}', "attempt: Input should be greater than or equal to 1"),
        ('{"student_id": "x", "answers": {"stop1.trpo-exact": {"nested": 1}}}', "answers.stop1.trpo-exact"),
    ],
)
def test_malformed_responses_file_gets_a_clear_error(run_cli, tmp_path, content, fragment):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ResponsesError) as info:
        load_responses(path)
    assert str(path) in str(info.value) and fragment in str(info.value)
    code, _, err = run_cli(["quiz", "grade", path, "--out", tmp_path / "report.json"])
    assert code == 2 and fragment in err
    assert not (tmp_path / "report.json").exists()


def test_a_later_attempt_replaces_a_wrong_answer(bank, key_of, checker):
    """Attempt 1 misses a question of stop 2; attempt 2 answers *its own* draw of stop 2 right (no grader count:
    each attempt the files declare is judged on its own draw, and a stop passes when one of them passes it)."""
    first = copy.deepcopy(key_of("hana", 1))
    qid = asked(bank, first, checker)[2][0]
    first["answers"][qid] = None
    second = {"student_id": "hana", "attempt": 2, "answers": {q.id: key_of("hana", 2)["answers"][q.id]
                                                               for q in bank.questions(2)}}
    assert not grade(bank, [Responses.model_validate(first)], checker=checker).complete
    report = grade(bank, [Responses.model_validate(first), Responses.model_validate(second)], checker=checker)
    assert report.complete


def _results(write_json, tmp_path, scores, **extra):
    data = {"score": sum(s for s, _ in scores.values()), "tests": [],
            "extra_data": {"max_score": sum(m for _, m in scores.values()), "grader_version": "t",
                           "status": "graded", "profile": "full", **extra,
                           "exercises": {stem: {"score": s, "max_score": m} for stem, (s, m) in scores.items()}}}
    return write_json(tmp_path / "results.json", data)


def test_exercise_requirement_uses_results_json(bank, key_of, checker, tmp_path, write_json):
    from ppo_course.syllabus import EXERCISES

    responses = [Responses.model_validate(key_of("ivan"))]
    every = {stem: (10.0, 10.0) for stem in EXERCISES}
    full = _results(write_json, tmp_path, every)
    assert grade(bank, responses, checker=checker, results=full, require_exercises=True).complete
    short = _results(write_json, tmp_path, every | {"ex4_gae": (11.5, 12.0)})
    report = grade(bank, responses, checker=checker, results=short, require_exercises=True)
    assert not report.complete and report.exercises["below_full_marks"] == ["ex4_gae"]
    # Two exercises at full marks are not the assignment (red team a104): a partial grading completes nothing.
    partial = _results(write_json, tmp_path, {"ex1_ratio": (10.0, 10.0), "ex4_gae": (12.0, 12.0)})
    report = grade(bank, responses, checker=checker, results=partial, require_exercises=True)
    assert not report.complete and report.exercises["problems"][0].startswith("not graded: ex2_clipped_loss")
    # Not required by the (default) policy: the quiz alone completes the chapter.
    assert grade(bank, responses, checker=checker, results=short).complete
    assert not Report("x", {}, exercises_required=True).complete


def test_grade_batch_writes_a_gradebook(bank, run_cli, key_of, checker, tmp_path, write_json):
    cohort = tmp_path / "cohort"
    cohort.mkdir()
    write_json(cohort / "alice.json", key_of("alice"))
    bob = copy.deepcopy(key_of("bob"))
    shown = asked(bank, bob, checker)
    bob["answers"][shown[4][0]] = None
    (cohort / "nested").mkdir()
    write_json(cohort / "nested" / "bob.json", bob)
    (cohort / "broken.json").write_text("{")
    out = tmp_path / "quiz_gradebook.csv"
    code, _, err = run_cli(["quiz", "grade-batch", cohort, "--out", out])
    assert code == 0, err
    rows = {r["student_id"]: r for r in csv.DictReader(out.open())}
    alice = asked(bank, key_of("alice"), checker)
    assert rows["alice"]["complete"] == "True" and rows["alice"]["total"] == str(sum(map(len, alice.values())))
    assert rows["bob"]["complete"] == "False" and rows["bob"]["stop4"] == str(len(shown[4]) - 1)  # one wrong
    assert rows["broken"]["status"] == "rejected" and "not valid JSON" in rows["broken"]["message"]


def test_grade_batch_neutralises_student_text_in_the_gradebook(bank, run_cli, key_of, tmp_path, write_json):
    """Issue 10, class 7: a student id or file name that is a spreadsheet formula is never written as one."""
    cohort = tmp_path / "cohort"
    cohort.mkdir()
    write_json(cohort / "evil.json", key_of('=HYPERLINK("http://evil.example","x")'))
    (cohort / "@SUM(A1).json").write_text("{")
    out = tmp_path / "quiz_gradebook.csv"
    code, _, err = run_cli(["quiz", "grade-batch", cohort, "--out", out])
    assert code == 0, err
    rows = list(csv.reader(out.open()))
    assert len(rows) == 3
    assert all(cell[:1] not in ("=", "+", "-", "@", "\t", "\r") for row in rows for cell in row)
    assert {row[0] for row in rows[1:]} == {"'=HYPERLINK(\"http://evil.example\",\"x\")", "'@SUM(A1)"}


def test_quiz_grade_draws_the_attempt_from_its_ledger_and_binds_the_file_to_its_student(bank, run_cli, tmp_path):
    """Issue 20 item 6: the grader's count, not the file's number; a file handed in for another student scores 0."""
    key1, key2 = tmp_path / "k1.json", tmp_path / "k2.json"
    assert run_cli(["quiz", "key", "--student", "alice", "--out", key1])[0] == 0
    assert run_cli(["quiz", "key", "--student", "alice", "--attempt", 2, "--out", key2])[0] == 0
    out = tmp_path / "out"
    code, text, err = run_cli(["quiz", "grade", key1, "--out", out / "r1.json", "--student", "alice"])
    assert code == 0, err
    assert json.loads((out / "r1.json").read_text())["complete"] is True and "next submission is attempt 2" in text
    # The same file again is a regrade (same attempt, same grade); as a new submission it needs attempt 2.
    assert run_cli(["quiz", "grade", key1, "--out", out / "again.json", "--student", "alice"])[0] == 0
    assert json.loads((out / "again.json").read_text())["graded_as_attempt"] == 1
    assert run_cli(["quiz", "grade", key2, "--out", out / "r2.json", "--student", "alice"])[0] == 0
    assert json.loads((out / "r2.json").read_text())["graded_as_attempt"] == 2
    code, text, _ = run_cli(["quiz", "grade", key2, "--out", out / "bob.json", "--student", "bob"])
    report = json.loads((out / "bob.json").read_text())
    assert code == 0 and report["score"] == 0 and report["stops_passed"] == 0
    assert "'alice''s, but it was handed in by 'bob'" in report["problem"] and "scored 0" in text


def test_grade_batch_by_folder_refuses_a_file_in_another_students_folder(bank, run_cli, key_of, tmp_path, write_json):
    """Issue 20 item 6 for the batch: with --by-folder, a classmate's passing file earns nothing for the copier."""
    cohort = tmp_path / "cohort"
    for owner in ("alice", "carl"):
        (cohort / owner).mkdir(parents=True)
        write_json(cohort / owner / "quiz_responses.json", key_of("alice"))
    out = tmp_path / "quiz_gradebook.csv"
    code, _, err = run_cli(["quiz", "grade-batch", cohort, "--out", out, "--by-folder"])
    assert code == 0, err
    rows = {r["student_id"]: r for r in csv.DictReader(out.open())}
    assert rows["alice"]["complete"] == "True" and rows["carl"]["status"] == "rejected"
    assert "is 'alice''s responses file, handed in by 'carl'" in rows["carl"]["message"]


def _faulted_results(tmp_path):
    """The results.json ``grade-batch`` publishes for a grader fault (``grader.records.outcome.fault_results_json``,
    the one writer of that shape): no score anywhere, ``extra_data.status`` ``grader_fault``."""
    from grader.records.outcome import fault_results_json
    from grader.records.results import ExerciseResult, GradeResult
    from ppo_course.syllabus import EXERCISES

    result = GradeResult(submission="ivan", status="graded", grader_version="t", profile="full", tests=[],
                         exercises={stem: ExerciseResult(score=0.0, max_score=10.0) for stem in EXERCISES})
    path = tmp_path / "results.json"
    path.write_text(json.dumps(fault_results_json(result, "No module named 'hypothesis'")))
    assert "score" not in json.loads(path.read_text())  # the shape the readers must take: no score field
    return path


def test_a_faulted_results_json_says_the_grading_will_be_rerun_and_completes_nothing(bank, key_of, checker, tmp_path,
                                                                                     run_cli, write_json):
    """Issue 30: a results.json whose grading faulted raised ResponsesError ("not a results.json"), crashing
    `quiz grade --results`. Now it is read as what it is: not full marks, never a 0, every exercise score None,
    and the reason says the exercises' grading faulted and will be rerun; the chapter is not complete."""
    from quiz_bank.grading import exercises_from_results

    faulted = _faulted_results(tmp_path)
    seen = exercises_from_results(faulted)
    assert seen["faulted"] is True and seen["full_marks"] is False
    assert all(s["score"] is None for s in seen["scores"].values()) and seen["below_full_marks"] == []
    assert "faulted" in seen["problems"][0] and "rerun" in seen["problems"][0]
    responses = [Responses.model_validate(key_of("ivan"))]
    report = grade(bank, responses, checker=checker, results=faulted, require_exercises=True)
    assert not report.complete and report.exercises_full_marks is False
    assert grade(bank, responses, checker=checker, results=faulted).complete  # quiz alone, as the policy says
    answers = write_json(tmp_path / "ivan.json", key_of("ivan"))
    code, out, err = run_cli(["quiz", "grade", answers, "--results", faulted, "--require-exercises",
                              "--out", tmp_path / "report.json"])
    assert code == 0, err
    data = json.loads((tmp_path / "report.json").read_text())
    assert data["complete"] is False and data["exercises"]["faulted"] is True
    assert "will be rerun" in out and "chapter complete: no" in out
