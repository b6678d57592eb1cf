"""Bots on the responses-file path (``quiz grade``, Gradescope): a bot that remembers every verdict it was told
completes no stop within 30 resubmissions (issue 31, "Also").

Each resubmission is an attempt the grader counts (``quiz_bank.ledger``; Gradescope's ``previous_submissions``)
and is graded in process by ``quiz_bank.grading.grade`` with that count, as both graders do. The bot answers the
questions the attempt asks (the public draw of ``quiz_bank.offline``, as the bundle's ``quiz take`` does) and is
told the most a grader tells: ``quiz grade``'s report.json, a verdict per question. It remembers each verdict by
what it saw (``test_quiz_bots.MemoryBot``) and never computes anything.
"""

from __future__ import annotations

import pytest
from test_quiz_bots import MemoryBot

from quiz_bank.engine import normalise_response, render
from quiz_bank.grading import grade
from quiz_bank.models import Responses
from quiz_bank.offline import attempt_at
from quiz_bank.parsing import Unparseable

RESUBMISSIONS = 30


def _file(bank, bot, student: str, n: int) -> tuple[dict, dict]:
    """(the responses file of attempt ``n``, {question id: (variant, what the bot typed)})."""
    answers, typed = {}, {}
    for stop in sorted(bank.stops):
        for qid in attempt_at(bank, stop, student, n).order:
            variant = render(bank.by_id[qid], student, n, shuffle=True)
            given = bot.answer(variant)
            typed[qid] = (variant, given)
            try:
                answers[qid] = normalise_response(variant.question, given, variant)
            except Unparseable:
                answers[qid] = None
    return {"student_id": student, "attempt": n, "answers": answers}, typed


def resubmit(bank, checker, bot, student: str, cap: int = RESUBMISSIONS) -> dict:
    """Resubmit up to ``cap`` times; {stop: the submission that first passed it}, and the memory's use."""
    passed, remembered_right = {}, 0
    for n in range(1, cap + 1):
        data, typed = _file(bank, bot, student, n)
        report = grade(bank, [Responses.model_validate(data)], checker=checker, submitter=student, attempt=n).to_json()
        for name, stop in report["stops"].items():
            if stop["passed"] and int(name[4:]) not in passed:
                passed[int(name[4:])] = n
            for q in stop["questions"]:
                variant, given = typed[q["id"]]
                remembered_right += q["seen_before"] and q["correct"]
                bot.observe(variant, given, q["correct"])  # a verdict per question: the most any grader tells
    return {"passed": passed, "remembered_right": remembered_right}


@pytest.mark.parametrize("seed", [0, 1])
def test_a_bot_that_remembers_verdicts_completes_no_stop_within_30_resubmissions(bank, checker, seed):
    """Elimination with perfect memory, every stop in every file, 30 resubmissions: no stop passes. The memory
    works (it answers questions it was told about right) but a question told about is stale and never counts."""
    out = resubmit(bank, checker, MemoryBot(seed), f"resubmit-{seed}")
    assert out["passed"] == {}, out
    assert out["remembered_right"] >= 1, out  # the bot did meet and answer again what it had been told
