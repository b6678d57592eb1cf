"""The mastery policy: one unseen item per claim, and a stop passes on unseen items only.

The chapter's rule is "100% to complete". Asked as "every question of the
stop right", it can be met by elimination: a fixed question comes back word
for word, so a student who remembers what was marked wrong passes without
understanding (issue 20, items 1 and 7). The mastery policy closes that:

- **Claims.** Each stop lists the chapter's claims; each question asks one
  claim (``question.claim``; a question without one is its own claim) and
  several questions may ask the same claim interchangeably.
- **Draw.** An attempt shows, for each claim of the stop, one item the student
  has not seen: a fixed question never shown to them before, or a parametric
  question whose parameters, drawn from the attempt number, differ from every
  earlier showing (a small grid repeats: the same statement again is a seen
  item). Among unseen items one is drawn from (student, stop, attempt); when a
  claim has none left, its least recently seen item is shown.
- **The rule.** A stop is complete when, in one attempt, every claim of the
  stop is answered right, each on an item the student had not seen before
  that attempt. A right answer on an item seen before does not count (unless
  the stop's policy sets ``count_seen: true``).
- **Feedback.** No right/wrong verdict during an attempt; after it, the claims
  missed and the section to reread, never which option was right.

``seen`` holds the *items* shown in the student's earlier attempts
(:func:`item_key`: a fixed question's id, a parametric question's id with its
parameters; before red team a136 parametric questions were never "seen", and a
bot remembering the verdicts on their repeated variants passed stops 1, 3, 4
and 7 in 17-23 attempts). Pure functions: the quiz server (``quiz_bank.instructor.server.quiz``), the
terminal quiz (``quiz_bank.take``) and the benchmark
(``benchmarks/bench_quiz_integrity.py``) all call these, so the three run the
same policy.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from quiz_bank import variants

RULE = ("A stop is complete when, in one attempt, every claim of the stop is answered right, each on a question "
        "you had not seen before that attempt (a question with new numbers counts as new). Each attempt asks one "
        "question per claim, a new one where the bank has one; no answer is marked right or wrong during the "
        "attempt; afterwards you see which claims you missed and the section to reread.")


def claim_of(question) -> str:
    """The claim a question asks (``question.claim``; missing or empty → the question's own id)."""
    return getattr(question, "claim", None) or question.id


def level_of(question) -> str:
    """``recall``, ``apply`` or ``understand`` (``question.level``; missing → ``recall``)."""
    return getattr(question, "level", None) or "recall"


@dataclass(frozen=True)
class Claim:
    """One claim of a stop: its id, text (the id when the bank has none), source and the items asking it."""

    id: str
    text: str
    cite: str
    items: tuple[str, ...]


def stop_claims(bank, stop: int) -> list[Claim]:
    """The claims of ``stop`` in bank order, each with the ids of the questions that ask it.

    A claim listed in the stop file's ``claims:`` (``{id, text, source}``) gives
    its text; a claim no question asks is left out (it cannot be drawn).
    """
    listed = {}
    for entry in getattr(bank.stops[stop], "claims", None) or ():
        cid = entry.get("id") if isinstance(entry, Mapping) else getattr(entry, "id", None)
        if cid:
            listed[cid] = entry
    order: dict[str, list] = {}
    for q in bank.questions(stop):
        order.setdefault(claim_of(q), []).append(q)
    claims = []
    for cid, questions in order.items():
        entry = listed.get(cid)
        text = (entry.get("text") if isinstance(entry, Mapping) else getattr(entry, "text", None)) if entry else None
        cite = questions[0].source.cite()
        claims.append(Claim(cid, text or _text_from_question(questions[0]), cite, tuple(q.id for q in questions)))
    return claims


def _text_from_question(question) -> str:
    """A claim without a listed text: named after its question's id (never its prompt's key)."""
    return question.id.split(".", 1)[-1].replace("-", " ")


#: How many later attempts ``exhausted_claims`` looks through for a parametric item's unseen variant.
LOOKAHEAD = 64


def item_key(question, student_id: str, attempt: int) -> str:
    """What the student is shown, as the key of ``seen``: a fixed question's id; for a parametric one its id and
    the parameters drawn for (student, attempt) (red team a136).

    A parametric question draws from a small grid (often one statement of four to eight), so the same variant
    comes back a few attempts later, word for word: remembering what the claims-missed review said about it
    answers it by elimination, exactly as a fixed question seen before. A variant is new only when its
    parameters are.
    """
    if not question.is_parametric:
        return question.id
    spec = question.parametric
    params = variants.draw(spec.generator, spec.args, student_id, question.id, attempt)
    return question.id + "#" + json.dumps(params, sort_keys=True, default=str)


def is_unseen(question, seen: Iterable[str], student_id: str, attempt: int) -> bool:
    """True when the item ``question`` shows at (student, attempt) is not in ``seen`` (keys of :func:`item_key`)."""
    return item_key(question, student_id, attempt) not in set(seen)


def draw(bank, stop: int, student_id: str, attempt: int, last_seen: Mapping[str, int]) -> list[str]:
    """The question ids an attempt shows: one per claim, unseen preferred, in a shuffled order.

    Args:
        last_seen: item key (:func:`item_key`: a fixed question's id, a parametric variant) → the last attempt
            (1-based) that showed it to this student (:func:`last_seen_from`).

    Returns:
        One question id per claim of the stop, in the order the attempt asks them.
    """
    rng = random.Random(variants.variant_seed(student_id, f"stop{stop}#mastery", attempt))
    chosen = []
    for claim in stop_claims(bank, stop):
        items = [bank.by_id[q] for q in claim.items]
        keys = {q.id: item_key(q, student_id, attempt) for q in items}
        fresh = [q for q in items if keys[q.id] not in last_seen]
        if fresh:
            chosen.append(rng.choice(fresh).id)
        else:  # every item seen: the least recently seen (ties: bank order)
            chosen.append(min(items, key=lambda q: last_seen[keys[q.id]]).id)
    rng.shuffle(chosen)
    return chosen


def last_seen_from(orders: Iterable[tuple[int, Iterable[str]]], bank, student_id: str) -> dict[str, int]:
    """Item key (:func:`item_key`) → last attempt showing it, from (attempt, question ids shown) pairs of
    ``student_id``: fixed questions by id, parametric ones by the variant each attempt drew."""
    out: dict[str, int] = {}
    for attempt, ids in orders:
        for qid in ids:
            q = bank.by_id.get(qid)
            if q is not None:
                key = item_key(q, student_id, attempt)
                out[key] = max(out.get(key, 0), attempt)
    return out


def stale_items(bank, order: Iterable[str], last_seen_before: Mapping[str, int], student_id: str,
                attempt: int) -> set[str]:
    """The items of ``attempt`` the student had seen before it: a fixed id, or a parametric variant with the
    same parameters, shown in an earlier attempt (``last_seen_before``: :func:`last_seen_from` of those)."""
    return {qid for qid in order if item_key(bank.by_id[qid], student_id, attempt) in last_seen_before}


def attempt_passes(order: Iterable[str], correct: Mapping[str, bool], stale: set[str], *, count_seen: bool = False) -> bool:
    """The mastery rule on one finished attempt: every item right, none of them seen before (see module doc)."""
    order = list(order)
    return bool(order) and all(correct.get(q, False) for q in order) and (count_seen or not (set(order) & stale))


def missed_claims(bank, stop: int, order: Iterable[str], correct: Mapping[str, bool], stale: set[str],
                  *, count_seen: bool = False) -> list[Claim]:
    """The claims an attempt did not establish: answered wrong, or right only on an item seen before."""
    by_item = {}
    for claim in stop_claims(bank, stop):
        for qid in claim.items:
            by_item[qid] = claim
    missed = []
    for qid in order:
        if not correct.get(qid, False) or (qid in stale and not count_seen):
            missed.append(by_item[qid])
    return missed


def exhausted_claims(bank, stop: int, last_seen: Mapping[str, int], student_id: str,
                     next_attempt: int) -> list[Claim]:
    """Claims with no unseen item left: every fixed item shown, and no parametric item draws an unseen variant
    in the next :data:`LOOKAHEAD` attempts from ``next_attempt``; the next attempt cannot establish them."""

    def used_up(q) -> bool:
        if not q.is_parametric:
            return q.id in last_seen
        return all(item_key(q, student_id, n) in last_seen for n in range(next_attempt, next_attempt + LOOKAHEAD))

    return [c for c in stop_claims(bank, stop) if all(used_up(bank.by_id[q]) for q in c.items)]
