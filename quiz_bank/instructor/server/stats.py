"""Class statistics for the instructor's dashboard: completion, first-try rates, discrimination, distractors.

- **Completion per stop**: students who passed it (100% in one attempt) over
  students who started it, and over the roster.
- **First-try rate per question**: the share of students whose answer in
  their *first* attempt at the stop was right.
- **Discrimination per question**: the point-biserial correlation between
  being right on the first try and the student's first-try score on the *other*
  questions of the same stop (the corrected item–rest correlation of classical
  test theory); near 0 or negative flags a question that does not separate
  students who know the stop from those who do not. ``None`` with fewer than 3
  students or no spread.
- **Most-missed distractors**: wrong options of choice questions, by how many
  wrong answers (all attempts) chose them.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass

from quiz_bank.loader import Bank


@dataclass
class QuestionStats:
    """One question's row on the dashboard."""

    question_id: str
    stop: int
    n_first: int
    first_try_rate: float | None
    discrimination: float | None


def _pearson(xs: list[float], ys: list[float]) -> float | None:
    n = len(xs)
    if n < 3:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    if sxx == 0 or syy == 0:
        return None
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / math.sqrt(sxx * syy)


def class_stats(bank: Bank, db, roster_size: int) -> dict:
    """Everything the dashboard shows (see the module docstring).

    Args:
        bank: the bank. db: the server's QuizDB. roster_size: students on the roster (0 if none).

    Returns:
        ``{"stops": [...], "questions": [QuestionStats], "distractors": [(question_id, option text, count)],
        "students": int, "complete": int}``.
    """
    answers = db.all_answers()
    attempts = db.all_attempts()
    first_attempt = {}
    for a in attempts:
        key = (a.student_id, a.stop)
        first_attempt[key] = min(first_attempt.get(key, a.attempt), a.attempt)
    first: dict[tuple[str, int], dict[str, bool]] = defaultdict(dict)  # (student, stop) -> qid -> right
    wrong_choices: Counter = Counter()
    for student, stop, attempt, qid, response, correct in answers:
        if attempt == first_attempt.get((student, stop)):
            first[(student, stop)][qid] = correct
        q = bank.by_id.get(qid)
        if not correct and q is not None and q.type in ("single", "multi"):
            key_ids = set(q.answer if isinstance(q.answer, list) else [q.answer])
            chosen = [response] if isinstance(response, str) else list(response or [])
            texts = {o.id: o.text for o in q.options}
            for option_id in chosen:
                if option_id not in key_ids and option_id in texts:
                    wrong_choices[(qid, texts[option_id])] += 1
    students = sorted({a.student_id for a in attempts})
    passed = defaultdict(set)
    started = defaultdict(set)
    for a in attempts:
        started[a.stop].add(a.student_id)
        if a.passed:
            passed[a.stop].add(a.student_id)
    stops = []
    for stop in sorted(bank.stops):
        denominator = roster_size or len(students)
        stops.append({
            "stop": stop, "title": bank.stops[stop].title, "started": len(started[stop]), "passed": len(passed[stop]),
            "completion": (len(passed[stop]) / denominator) if denominator else None,
        })
    questions = _question_stats(bank, first)
    complete = sum(1 for s in students if all(s in passed[stop] for stop in bank.stops))
    return {
        "stops": stops, "questions": questions, "students": len(students), "complete": complete,
        "distractors": [(qid, text, n) for (qid, text), n in wrong_choices.most_common(15)],
    }


def _question_stats(bank: Bank, first: dict[tuple[str, int], dict[str, bool]]) -> list[QuestionStats]:
    """Each question's first-try rate and discrimination, stop by stop in the bank's order.

    Args:
        first: ``(student, stop) -> question id -> right`` on the student's first attempt at the stop.
    """
    questions = []
    for stop in sorted(bank.stops):
        ids = [q.id for q in bank.questions(stop)]
        complete_first = {k: v for k, v in first.items() if k[1] == stop and len(v) == len(ids)}
        for qid in ids:
            marks = [v[qid] for k, v in first.items() if k[1] == stop and qid in v]
            xs = [float(v[qid]) for v in complete_first.values()]
            rest = [float(sum(v[o] for o in ids if o != qid)) for v in complete_first.values()]
            questions.append(QuestionStats(
                question_id=qid, stop=stop, n_first=len(marks),
                first_try_rate=(sum(marks) / len(marks)) if marks else None,
                discrimination=_pearson(xs, rest),
            ))
    return questions
