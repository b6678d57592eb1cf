"""Grading responses files: reading them, the key file, the per-student report and the mastery rule.

Built on ``quiz_bank.engine`` (variants and answer checking), which does not
import this module: import these names from here. A responses file is bound to
its student: :func:`grade` takes the submitter and the
grader's own attempt count (``quiz_bank.ledger``; Gradescope's metadata) and
scores a file for someone else, or for another attempt, 0 with the reason.

The rule is the web quiz's (``quiz_bank.mastery``): attempt ``n`` of a stop asks
the questions ``quiz_bank.offline.attempt_at`` draws for the student (each claim
on one unseen question or more); the stop passes when every one of them is
answered right and none was seen in an earlier attempt. Answers to questions
the attempt did not ask are ignored.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ppo_course.syllabus import N_STOPS
from quiz_bank.engine import Outcome, ResponsesError, check, expected_answer, load_policy, render
from quiz_bank.loader import Bank
from quiz_bank.models import Responses


def load_responses(path: Path | str) -> Responses:
    """Read and validate a responses (or key) file.

    Raises:
        ResponsesError: unreadable file, invalid JSON, or a schema violation;
            the message names the file and what is wrong.
    """
    path = Path(path)
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ResponsesError(f"{path}: cannot read the responses file: {exc}") from None
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ResponsesError(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    if not isinstance(data, dict):
        raise ResponsesError(f"{path}: expected a JSON object with student_id, attempt and answers")
    try:
        return Responses.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '(top level)'}: {e['msg']}" for e in exc.errors())
        raise ResponsesError(f"{path}: invalid responses file: {problems}") from None


def answer_key(bank: Bank, student_id: str, attempt: int = 1) -> dict[str, Any]:
    """The key file of ``quiz key``: the responses schema holding the right answers.

    Raises:
        KeysUnavailable: on a key-less install.
    """
    answers = {q.id: expected_answer(render(q, student_id, attempt)) for q in bank.questions()}
    for q in bank.questions():
        if q.type == "symbolic":
            answers[q.id] = str(answers[q.id])
    return {"student_id": student_id, "attempt": attempt, "answers": answers}


def _binding_problem(responses, student_id: str, submitter: str | None, attempt: int | None) -> str | None:
    """Why these files may not be graded for ``submitter`` as ``attempt`` (None when they may)."""
    if submitter is not None and student_id != submitter:
        return (f"this responses file is {student_id!r}'s, but it was handed in by {submitter!r}: "
                "a file counts only for the student who answered it")
    declared = sorted({r.attempt for r in responses} | {n for r in responses for n in r.attempts.values()})
    if attempt is not None and declared != [attempt]:
        return (f"this file answers attempt(s) {declared}, but this submission is graded as attempt {attempt}: "
                f"run `ppo-course quiz take --attempt {attempt}` and hand in the file it writes")
    return None


def _refused(bank: Bank, student_id: str, problem: str, require_exercises, results) -> "Report":
    """A report scoring every question 0 with ``problem`` as the reason (a file that may not be graded)."""
    stops = {stop: [Outcome(q.id, "unanswered", f"Not graded: {problem}.", None, 1) for q in bank.questions(stop)]
             for stop in sorted(bank.stops)}
    required = load_policy(bank).require_exercises if require_exercises is None else require_exercises
    return Report(student_id=student_id, stops=stops, exercises_required=required, problem=problem,
                  exercises=exercises_from_results(results) if results is not None else None)


@dataclass
class Report:
    """A graded student: per-stop results, unknown ids and the completion verdict (``problem``: why it scored 0).

    ``stops`` holds an Outcome per question the graded attempt asked; ``stale`` the ids of those an earlier
    attempt had shown (right on them does not count); ``missed`` the ``mastery.Claim`` objects not established.
    """

    student_id: str
    stops: dict[int, list[Outcome]]
    unknown_question_ids: list[str] = field(default_factory=list)
    exercises: dict[str, Any] | None = None
    exercises_required: bool = False
    attempts: list[int] = field(default_factory=list)
    problem: str | None = None
    kept_passed: set[int] = field(default_factory=set)
    stale: dict[int, frozenset[str]] = field(default_factory=dict)
    missed: dict[int, list] = field(default_factory=dict)

    def stop_passed(self, stop: int) -> bool:
        """The mastery rule: every question the attempt asked is right and none was seen in an earlier attempt
        (``stale``), or the stop was passed before (never lowered)."""
        if stop in self.kept_passed:
            return True
        outcomes = self.stops.get(stop, [])
        seen = self.stale.get(stop, frozenset())
        return bool(outcomes) and all(o.correct and o.question_id not in seen for o in outcomes)

    @property
    def exercises_full_marks(self) -> bool | None:
        """True/False when a results.json was given, None otherwise."""
        return None if self.exercises is None else self.exercises["full_marks"]

    @property
    def complete(self) -> bool:
        """All eight stops pass (and, if required, every exercise is at full marks)."""
        quiz_done = all(self.stop_passed(s) for s in range(1, N_STOPS + 1))
        if self.exercises_required:
            return quiz_done and self.exercises_full_marks is True
        return quiz_done

    def to_json(self) -> dict[str, Any]:
        """The report.json written by ``quiz grade``."""
        stops = {}
        for stop in range(1, N_STOPS + 1):
            outcomes = self.stops.get(stop, [])
            seen = self.stale.get(stop, frozenset())
            stops[f"stop{stop}"] = {
                "score": sum(o.correct for o in outcomes),
                "max_score": len(outcomes),
                "passed": self.stop_passed(stop),
                "passed_before": stop in self.kept_passed,
                "claims_missed": [{"claim": c.text, "cite": c.cite} for c in self.missed.get(stop, [])],
                "questions": [
                    {"id": o.question_id, "status": o.status, "correct": o.correct, "attempt": o.attempt,
                     "seen_before": o.question_id in seen, "feedback": o.feedback}
                    for o in outcomes
                ],
            }
        out: dict[str, Any] = {
            "student_id": self.student_id,
            "attempts": self.attempts,
            "score": sum(s["score"] for s in stops.values()),
            "max_score": sum(s["max_score"] for s in stops.values()),
            "stops_passed": sum(s["passed"] for s in stops.values()),
            "complete": self.complete,
            "stops": stops,
            "unknown_question_ids": self.unknown_question_ids,
        }
        if self.problem is not None:
            out["problem"] = self.problem
        if self.exercises is not None or self.exercises_required:
            out["exercises"] = self.exercises or {"full_marks": False, "detail": "no results.json given"}
            out["exercises_required"] = self.exercises_required
        return out


def exercises_from_results(path: Path | str) -> dict[str, Any]:
    """Per-exercise scores of a results.json (contract schema) and whether the exercises are done.

    ``full_marks`` is True only for a grade of the whole assignment: every exercise of the syllabus
    (``ppo_course.syllabus.EXERCISES``) present and at its full marks, ``extra_data.status`` "graded",
    ``extra_data.profile`` "full" and not out of time. A partial grading (``--exercises ex1_ratio``) or a
    fast-profile preview at its own maxima is not (two exercises, or the fast tier whose exercise 7
    never trains, do not complete the chapter, as the export agrees). The reasons are
    in ``problems``.

    A results.json of a grader fault (``extra_data.status`` "grader_fault": the grader itself failed, so no
    exercise has a score) is no grade at all: ``full_marks`` False, ``faulted`` True, each exercise's ``score``
    None, and ``problems`` says plainly that the exercises' grading faulted and will be rerun.

    Raises:
        ResponsesError: if the file is unreadable or lacks ``extra_data.exercises``.
    """
    from ppo_course.syllabus import EXERCISES

    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        extra = data["extra_data"]
        exercises = extra["exercises"]
        if extra.get("status") == GRADER_FAULT:
            return _faulted_exercises(exercises)
        scores = {stem: (float(v["score"]), float(v["max_score"])) for stem, v in exercises.items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ResponsesError(f"{path}: not a results.json with extra_data.exercises: {type(exc).__name__}: {exc}") from None
    # Scores are sums of float points: compare with a tolerance far below one point; NaN is never full marks.
    short = sorted(stem for stem, (s, m) in scores.items() if not math.isclose(s, m, rel_tol=0.0, abs_tol=1e-9))
    problems = []
    missing = [stem for stem in EXERCISES if stem not in scores]
    if missing:
        problems.append(f"not graded: {', '.join(missing)}")
    if extra.get("status") != "graded":
        problems.append(f"status {str(extra.get('status'))[:40]!r}, not 'graded'")
    if extra.get("profile") != "full":
        problems.append(f"profile {str(extra.get('profile'))[:40]!r}: not the full grading (a preview)")
    if extra.get("out_of_time"):
        problems.append("the grading ran out of time before every test ran")
    return {
        "full_marks": bool(scores) and not short and not problems,
        "below_full_marks": short,
        "problems": problems,
        "scores": {stem: {"score": s, "max_score": m} for stem, (s, m) in scores.items()},
    }


#: ``extra_data.status`` of a results.json whose grading failed in the grader itself (no score exists).
GRADER_FAULT = "grader_fault"

#: What a student and the quiz's reports read when the exercises' results.json is a grader fault.
FAULTED_EXERCISES = ("the grading of your exercises faulted (the grader itself failed, not your code) and will be "
                     "rerun by the course staff: it is no score, so the exercises are not counted yet and the "
                     "chapter is not complete until the rerun grades them")


def _faulted_exercises(exercises: Any) -> dict[str, Any]:
    """:func:`exercises_from_results` of a grader fault: no score anywhere, never full marks, the plain reason."""
    stems = list(exercises) if isinstance(exercises, dict) else []
    maxima = {stem: exercises[stem].get("max_score") if isinstance(exercises[stem], dict) else None for stem in stems}
    return {"full_marks": False, "faulted": True, "below_full_marks": [], "problems": [FAULTED_EXERCISES],
            "scores": {stem: {"score": None, "max_score": m} for stem, m in maxima.items()}}


def _answers_by_attempt(bank: Bank, responses: list[Responses]) -> tuple[dict[tuple[str, int], Any], set[str], set[int]]:
    """``({(question id, attempt): answer}, unknown ids, attempts declared)``: a later file wins a tie; ids the
    bank does not know are collected, never graded."""
    given: dict[tuple[str, int], Any] = {}
    unknown: set[str] = set()
    for r in responses:
        for qid, answer in r.answers.items():
            if qid not in bank.by_id:
                unknown.add(qid)
                continue
            given[(qid, r.attempt_of(qid))] = answer
    unknown |= {qid for r in responses for qid in r.attempts if qid not in bank.by_id}
    declared = {r.attempt for r in responses} | {n for r in responses for n in r.attempts.values()}
    return given, unknown, declared


def _judge_attempt(bank: Bank, stop: int, student_id: str, n: int, given, checker):
    """(outcomes, stale ids, missed claims) of attempt ``n`` at ``stop``: each question it asks, checked against the
    variant drawn for the student at ``n`` (an unanswered one checks ``None``)."""
    from quiz_bank import mastery
    from quiz_bank.offline import attempt_at

    drawn = attempt_at(bank, stop, student_id, n)
    outcomes = [check(render(bank.by_id[qid], student_id, n), given.get((qid, n)), checker) for qid in drawn.order]
    correct = {o.question_id: o.correct for o in outcomes}
    return outcomes, drawn.stale, mastery.missed_claims(bank, stop, drawn.order, correct, set(drawn.stale))


def _judge_stops(bank: Bank, given, declared: set[int], student_id: str, attempt: int | None, checker):
    """``({stop: outcomes}, {stop: stale ids}, {stop: missed claims})``. With the grader's ``attempt`` that attempt
    is judged; without it (a TA's batch) each attempt the files declare is, and a stop keeps the first that
    passes it (else the latest)."""
    stops, stale, missed = {}, {}, {}
    for stop in sorted(bank.stops):
        judged = None
        for n in ([attempt] if attempt is not None else sorted(declared)):
            judged = _judge_attempt(bank, stop, student_id, n, given, checker)
            if not judged[2] and all(o.correct for o in judged[0]):
                break
        stops[stop], stale[stop], missed[stop] = judged
    return stops, stale, missed


def grade(
    bank: Bank,
    responses: list[Responses],
    *,
    checker=None,
    results: Path | str | None = None,
    require_exercises: bool | None = None,
    submitter: str | None = None,
    attempt: int | None = None,
) -> Report:
    """Grade one student's responses files against the keys (the mastery rule, see the module docstring).

    When several files are given (attempts) and the grader keeps no count, each
    declared attempt is judged on its own draw and a stop passes when one does.

    Bound to its student: with ``submitter`` (who handed the
    file in, as the grader knows them) a file naming another student scores 0
    with the reason; with ``attempt`` (the count the grader keeps) every
    variant is drawn for that attempt, whatever the file says, and a file
    answered for another attempt scores 0 with the reason. Unknown question ids are
    collected in ``Report.unknown_question_ids`` (reported, never ignored
    silently); unanswered questions are ``unanswered`` and fail their stop.

    Raises:
        ValueError: if the files belong to different students.
        KeysUnavailable: on a key-less install.
        ResponsesError: if ``results`` is not a valid results.json.
    """
    if not responses:
        raise ValueError("grade: no responses given")
    students = {r.student_id for r in responses}
    if len(students) != 1:
        raise ValueError(f"grade: responses of several students given together: {sorted(students)}")
    student_id = students.pop()
    problem = _binding_problem(responses, student_id, submitter, attempt)
    if problem is not None:
        return _refused(bank, submitter or student_id, problem, require_exercises, results)
    given, unknown, declared = _answers_by_attempt(bank, responses)
    own_checker = None
    if checker is None and any(q.type == "symbolic" for q in bank.questions()):
        from quiz_bank.symbolic import SymbolicChecker

        checker = own_checker = SymbolicChecker()
    try:
        stops, stale, missed = _judge_stops(bank, given, declared, student_id, attempt, checker)
    finally:
        if own_checker is not None:
            own_checker.close()
    policy_required = load_policy(bank).require_exercises if require_exercises is None else require_exercises
    return Report(
        student_id=student_id,
        stops=stops,
        unknown_question_ids=sorted(unknown),
        exercises=exercises_from_results(results) if results is not None else None,
        exercises_required=policy_required,
        attempts=sorted(declared), stale=stale, missed=missed,
    )
