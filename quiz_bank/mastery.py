"""The mastery policy: one unseen item per claim, and a stop passes on unseen items only.

The chapter's rule is "100% to complete". Asked as "every question of the
stop right", it can be met by elimination: a fixed question comes back word
for word, so a student who remembers what was marked wrong passes without
understanding. The mastery policy closes that:

- **Claims.** Each stop lists the chapter's claims; each question asks one
  claim (``question.claim``; a question without one is its own claim) and
  several questions may ask the same claim interchangeably.
- **Draw.** An attempt shows, for each claim of the stop, one item the student
  has not seen: a fixed question never shown to them before, or a parametric
  question (its parameters are drawn from the attempt number, so each attempt
  is a new item). Among unseen items one is drawn from (student, stop,
  attempt); when a claim has none left, its least recently seen item is shown.
  While blind guessing would pass the attempt with a chance above 0.1% (the
  product over its items of 1 / the number of possible answers), unseen items
  are added to the claims easiest to guess: a claim first drawn on a
  true/false item is asked again on a second item, say.
- **The rule.** A stop is complete when, in one attempt, every item of every
  claim of the stop is answered right, each on an item the student had not seen before
  that attempt. A right answer on an item seen before does not count (unless
  the stop's policy sets ``count_seen: true``).
- **Feedback.** No right/wrong verdict during an attempt; after it, the claims
  missed and the section to reread, never which option was right.

``seen`` is a map of *facts* shown in the student's earlier attempts (what
the "memory" bot exploits): a fixed question is one fact; a parametric item shows one
fact per draw: its case (``pick_case``), its option (``judge_option``, either polarity),
its pair (``ordered_pair``, either order) or its exact parameters. A draw whose fact was
shown before is seen: the verdict told after that attempt (one item per claim, so the
missed claims name it) answers it again, so it is stale like a repeated fixed question.
A derived item and its source question are one family: showing the source makes every
derived draw of it stale, and showing a derived draw makes the source stale.
Pure functions: the quiz server (``quiz_bank.instructor.server.quiz``), the
terminal quiz (``quiz_bank.take``) and the benchmark
(``benchmarks/bench_quiz_integrity.py``) all call these, so the three run the
same policy.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from quiz_bank import variants

RULE = ("A stop is complete when, in one attempt, every claim of the stop is answered right, each on questions "
        "you had not seen before that attempt (a question with new numbers counts as new). Each attempt asks each "
        "claim on a new question where the bank has one, and on a second one where a single question could be "
        "guessed (true or false, say); no answer is marked right or wrong during the attempt; afterwards you see "
        "which claims you missed and the section to reread.")


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


def derived_source(bank, question) -> str | None:
    """The id of the question ``question`` is derived from (``quiz_bank.derived``), or None."""
    from quiz_bank.derived import SUFFIXES

    for suffix in SUFFIXES:
        if question.id.endswith(suffix) and question.id[: -len(suffix)] in bank.by_id:
            return question.id[: -len(suffix)]
    return None


def _fact(question, params: Mapping) -> str:
    """The fact one draw of a parametric question shows (see the module docstring)."""
    import json

    generator = question.parametric.generator
    case = str(params.get("case", ""))
    if generator == "judge_option":  # "Q|option|polarity": the polarity only flips the key
        return f"{question.id}|" + "|".join(case.split("|")[:2])
    if generator == "ordered_pair":  # "Q|first|second": either order asks the same pair
        source, *pair = case.split("|")
        return f"{question.id}|{source}|" + "|".join(sorted(pair))
    if generator == "pick_case":
        return f"{question.id}|case={case}"
    return f"{question.id}|" + json.dumps(params, sort_keys=True, default=str)


def _tokens(bank, question, params: Mapping | None) -> tuple[set[str], set[str]]:
    """(facts that showing this draw records, facts any of which seen before make it stale)."""
    if not question.is_parametric:
        return {question.id, question.id + "#all"}, {question.id}
    fact = _fact(question, params or {})
    source = derived_source(bank, question)
    if source is not None:
        return {source, fact}, {source + "#all", fact}
    return {fact}, {fact}


def _params(question, student_id: str | None, attempt: int) -> Mapping | None:
    if not question.is_parametric or student_id is None:
        return None
    spec = question.parametric
    return variants.draw(spec.generator, spec.args, student_id, question.id, attempt)


def needs(bank, question, student_id: str | None, attempt: int) -> set[str]:
    """The facts whose showing before ``attempt`` makes ``question``'s draw at ``attempt`` stale.

    Without ``student_id`` a parametric question needs nothing (the pre-fact rule: always unseen).
    """
    if question.is_parametric and student_id is None:
        return set()
    return _tokens(bank, question, _params(question, student_id, attempt))[1]


#: The most a blind guess may pass one attempt by (the product over its items of :func:`guess_chance`).
GUESS_BOUND = 0.001
#: A blind guess's chance on a number or an expression: the share of the most frequent key over an item's draws
#: stays below this (``tests/quiz/test_content.py`` measures it per item; :data:`GUESS_BY_KEY` lists the higher ones).
OPEN_GUESS = 0.2
#: Parametric numeric keys with few possible values (a clip fraction of four tokens: 0, ¼, ½, ¾ or 1).
GUESS_BY_KEY = {"clipfrac": 0.4}


def guess_chance(question) -> float:
    """The chance that a blind guess answers one draw of ``question`` right (public: no key needed).

    true/false ½; single choice 1/options; multiple select 1/(2^options − 1); ordering 1/items!; a number or an
    expression :data:`OPEN_GUESS` (or its key's entry in :data:`GUESS_BY_KEY`). Returns a float in (0, 1].
    """
    import math

    kind = question.type
    if kind == "true_false":
        return 0.5
    if kind == "single":
        return 1.0 / len(question.options)
    if kind == "multi":
        return 1.0 / (2 ** len(question.options) - 1)
    if kind == "ordering":
        return 1.0 / math.factorial(len(question.items))
    spec = getattr(question, "parametric", None)
    return GUESS_BY_KEY.get(spec.key, OPEN_GUESS) if spec is not None else OPEN_GUESS


def blind_pass_chance(bank, order: Iterable[str]) -> float:
    """The chance that blind guessing answers every item of ``order`` right (product of :func:`guess_chance`)."""
    chance = 1.0
    for qid in order:
        chance *= guess_chance(bank.by_id[qid])
    return chance


def draw(bank, stop: int, student_id: str, attempt: int, last_seen: Mapping[str, int]) -> list[str]:
    """The question ids an attempt shows: one per claim, unseen preferred, then more until guessing cannot pass.

    After one item per claim, while a blind guess would pass the attempt with a chance above :data:`GUESS_BOUND`,
    one more unseen item is added to the claim whose items are easiest to guess (two true/false items instead of
    one, say), never an item whose fact another item of the attempt shows. The result is shuffled.

    Args:
        last_seen: fact → the last attempt (1-based) that showed it to this student (:func:`last_seen_from`).

    Returns:
        The question ids of the attempt (each claim of the stop at least once), in the order it asks them.
    """
    rng = random.Random(variants.variant_seed(student_id, f"stop{stop}#mastery", attempt))
    chosen, fresh_of, chance_of = [], {}, {}
    for claim in stop_claims(bank, stop):
        items = [bank.by_id[q] for q in claim.items]
        wanted = {q.id: needs(bank, q, student_id, attempt) for q in items}
        fresh = [q for q in items if not (wanted[q.id] & last_seen.keys())]
        if fresh:
            pick = rng.choice(fresh)
        else:  # every item seen: the least recently seen (ties: bank order)
            pick = min(items, key=lambda q: max((last_seen.get(t, 0) for t in wanted[q.id]), default=0))
        chosen.append(pick.id)
        fresh_of[claim.id] = [(q, wanted[q.id]) for q in fresh if q.id != pick.id]
        chance_of[claim.id] = guess_chance(pick)
    _add_until_unguessable(bank, chosen, fresh_of, chance_of, rng, student_id, attempt)
    rng.shuffle(chosen)
    return chosen


def _add_until_unguessable(bank, chosen: list[str], fresh_of: dict, chance_of: dict, rng, student_id, attempt) -> None:
    """Append unseen items to ``chosen`` (claim by claim, easiest to guess first) until the bound holds."""
    shown: set[str] = set()
    for qid in chosen:
        q = bank.by_id[qid]
        shown |= _tokens(bank, q, _params(q, student_id, attempt))[0]
    while blind_pass_chance(bank, chosen) > GUESS_BOUND:
        open_claims = [c for c in chance_of if any(not (need & shown) for _, need in fresh_of[c])]
        if not open_claims:
            return
        claim = max(open_claims, key=lambda c: chance_of[c])  # ties: bank order (max keeps the first)
        candidates = [q for q, need in fresh_of[claim] if not (need & shown)]
        pick = rng.choice(candidates)
        chosen.append(pick.id)
        fresh_of[claim] = [(q, need) for q, need in fresh_of[claim] if q.id != pick.id]
        chance_of[claim] *= guess_chance(pick)
        shown |= _tokens(bank, pick, _params(pick, student_id, attempt))[0]


def last_seen_from(orders: Iterable[tuple[int, Iterable[str]]], bank, student_id: str | None = None) -> dict[str, int]:
    """Fact → last attempt showing it, from (attempt, question ids shown) pairs.

    ``student_id`` (the id the variants are drawn for) is needed to know the facts of parametric
    draws; without it only fixed questions are tracked.
    """
    out: dict[str, int] = {}
    for attempt, ids in orders:
        for qid in ids:
            q = bank.by_id.get(qid)
            if q is None or (q.is_parametric and student_id is None):
                continue
            for token in _tokens(bank, q, _params(q, student_id, attempt))[0]:
                out[token] = max(out.get(token, 0), attempt)
    return out


def stale_items(bank, order: Iterable[str], last_seen_before: Mapping[str, int], student_id: str | None = None,
                attempt: int = 1) -> set[str]:
    """The items of ``attempt`` whose fact the student had seen before it (see :func:`needs`)."""
    return {qid for qid in order if needs(bank, bank.by_id[qid], student_id, attempt) & last_seen_before.keys()}


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
        if (not correct.get(qid, False) or (qid in stale and not count_seen)) and by_item[qid] not in missed:
            missed.append(by_item[qid])
    return missed


#: How many later attempts ``exhausted_claims`` looks through for a numeric draw whose fact is new.
LOOKAHEAD = 64


def exhausted_claims(bank, stop: int, last_seen: Mapping[str, int], student_id: str | None = None,
                     next_attempt: int | None = None) -> list[Claim]:
    """Claims with no unseen item left: the next attempt cannot establish them.

    Spent: a fixed item shown; a finite draw (case, option, pair) whose every fact was shown; a draw of numbers
    (often a small grid, so its variants repeat) with no new fact in the :data:`LOOKAHEAD`
    attempts from ``next_attempt`` for ``student_id`` (the id its variants are drawn for). Without them a draw of
    numbers is never spent.
    """
    def spent(q) -> bool:
        if not q.is_parametric:
            return q.id in last_seen
        cases = variants.enumerate_cases(q.parametric.generator, q.parametric.args)
        if cases is None:
            if student_id is None or next_attempt is None:
                return False
            return all(needs(bank, q, student_id, n) & last_seen.keys()
                       for n in range(next_attempt, next_attempt + LOOKAHEAD))
        return all(_tokens(bank, q, params)[1] & last_seen.keys() for params in cases)

    return [c for c in stop_claims(bank, stop) if all(spent(bank.by_id[q]) for q in c.items)]
