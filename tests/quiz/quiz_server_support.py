"""Helpers of the quiz-server tests: what a student who knows (or does not know) the answer posts.

The right answer comes from the engine's key (``expected_answer``) for the
variant the server shows, mapped to the labels on the page; a wrong one is
built from it (another option, the opposite truth value, key + 1 + |key|, …).
"""

from __future__ import annotations

import re

from quiz_bank.engine import expected_answer


def form_answer(service, student: str, question_id: str, attempt: int, right: bool = True):
    """The value(s) of the ``answer`` form field: right or wrong for this variant."""
    variant = service.variant(student, question_id, attempt)
    q = variant.question
    key = expected_answer(variant)
    label_of = {option_id: label for label, option_id, _ in variant.choices}
    if q.type == "single":
        if right:
            return label_of[key]
        return next(label for label, option_id, _ in variant.choices if option_id != key)
    if q.type == "multi":
        ids = set(key)
        if not right:
            others = [o for _, o, _ in variant.choices if o not in ids]
            ids = ids | {others[0]} if others else ids - {next(iter(ids))}
        return sorted(label_of[i] for i in ids)
    if q.type == "true_false":
        return "true" if bool(key) == right else "false"
    if q.type == "numeric":
        return repr(float(key)) if right else repr(float(key) + 1.0 + abs(float(key)))
    if q.type == "symbolic":
        return str(key) if right else f"({key}) + 1"
    if q.type == "ordering":
        order = list(key) if right else list(reversed(key))
        return " ".join(label_of[i] for i in order)
    raise AssertionError(q.type)


def current_question(html: str) -> tuple[int, str]:
    """(attempt, question id) of the question page ``html``."""
    attempt = int(re.search(r'name="attempt" value="(\d+)"', html).group(1))
    question = re.search(r'name="question" value="([^"]+)"', html).group(1)
    return attempt, question


def answer_stop(client, service, student: str, stop: int, wrong: set[int] = frozenset()) -> list[str]:
    """Start (or resume) ``stop`` and answer every question; the n-th answers (1-based) in ``wrong`` are wrong.

    Returns:
        The verdict page of each answer.
    """
    response = client.post(f"/stop/{stop}/start")
    assert response.status_code == 200, response.text
    pages = []
    n = 0
    while 'name="question"' in response.text:
        n += 1
        attempt, qid = current_question(response.text)
        value = form_answer(service, student, qid, attempt, right=n not in wrong)
        values = value if isinstance(value, list) else [value]
        data = {"student": student, "attempt": str(attempt), "question": qid, "answer": values}
        verdict = client.post(f"/stop/{stop}/answer", data=data)
        assert verdict.status_code == 200, verdict.text
        pages.append(verdict.text)
        response = client.get(f"/stop/{stop}")
    return pages
